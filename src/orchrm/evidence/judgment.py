"""The evaluator's settings and the judgment it returns, kept apart from `SkillEvaluator` so a module that
only produces judgments (`flat.py`) does not import the agent loop."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..llm import TokenCount


class EvaluatorConfig(BaseModel):
    """How the evaluator gathers and weighs evidence."""

    max_steps: int = Field(6, ge=1, description="Agent steps per run, the forced final answer included.")
    max_tokens: int = Field(320, ge=16, description="Completion tokens per agent step.")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    use_references: bool = Field(True, description="Let verifiers that need a reference answer use it.")
    skip_llm_when_decisive: bool = Field(True, description="No LLM call when rule evidence already decides.")
    prerun_costs: tuple[str, ...] = Field(("low",), description="Verifier costs run before the agent.")
    strong_weight: float = Field(0.85, ge=0.5, le=1.0)
    tie_margin: float = Field(0.1, ge=0.0, lt=0.5)
    both_orders: bool = Field(True, description="Pairwise: judge in both orders to cancel position bias.")
    protocol: Literal["auto", "json", "tools"] = Field(
        "auto", description="Agent actions: JSON under a schema, native tool calls, or auto (tools for served models)."
    )
    sandbox_cpu_s: int = Field(5, ge=1)
    sandbox_memory_mb: int = Field(512, ge=64)


class Judgment(BaseModel):
    """One judgment, as the CLI writes it (one JSON line per input row)."""

    mode: Literal["pointwise", "pairwise", "listwise"]
    status: Literal["ok", "error"] = "ok"
    score: float | None = Field(None, description="pointwise: 0-1.")
    verdict: Literal["A", "B", "tie"] | None = Field(None, description="pairwise.")
    best: int | None = Field(None, description="listwise: index of the best response.")
    scores: list[float | None] = Field(default_factory=list, description="pairwise/listwise: per-response scores.")
    confidence: float = 0.0
    used_resources: list[str] = Field(default_factory=list)
    reason: str = ""
    llm_skipped: bool = False
    flags: list[str] = Field(default_factory=list, description="Every fallback that happened.")
    errors: list[str] = Field(default_factory=list, description="Evidence that errored (never read as a score).")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def usage(self) -> TokenCount:
        return TokenCount(
            calls=self.llm_calls, prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens
        )
