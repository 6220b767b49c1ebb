"""The listwise judge baseline: the Skill-RM evaluator picks one of a question's executed plans.

`judgments.jsonl` holds one `JudgeRecord` per (question, N), appended as it finishes, so an interrupted run
resumes. Each record keeps the judge's reason, flags (every fallback that happened), errors and confidence
beside its pick, so the baseline can be audited after the run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from .. import jsonl
from ..evidence import EvaluatorConfig, Judgment, SkillEvaluator, trajectory_response
from ..llm import LLM
from ..mas.traces import Trace
from .config import BonConfig

JUDGMENTS_FILE = "judgments.jsonl"
#: The `Judgment` fields a record keeps as they are (the rest are mapped from response to plan indices).
_KEPT = ("prompt_tokens", "completion_tokens", "status", "confidence", "reason", "flags", "errors")


class JudgeRecord(BaseModel):
    """The listwise judge's pick among one question's first `n` plans (the valid, executed ones)."""

    question_id: str
    n: int
    key: str
    best: int | None  # plan index
    scores: dict[str, float | None] = Field(default_factory=dict)  # plan index -> score
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    status: str = "ok"
    # the judge's account of itself; records written before these were kept load with them empty
    confidence: float = 0.0
    reason: str = ""
    flags: list[str] = Field(default_factory=list, description="Every fallback that happened, per response.")
    errors: list[str] = Field(default_factory=list, description="Evidence that errored (never read as a score).")

    @classmethod
    def of(cls, question_id: str, n: int, key: str, plans: list[Trace], j: Judgment, wall_s: float) -> JudgeRecord:
        """The record of judgment `j` over `plans` (the judge's response indices mapped to plan indices)."""
        best = plans[j.best].plan_index if j.best is not None else None
        scores = {str(t.plan_index): s for t, s in zip(plans, j.scores, strict=False)}
        kept = {name: getattr(j, name) for name in _KEPT}
        return cls(question_id=question_id, n=n, key=key, best=best, scores=scores, wall_s=wall_s, **kept)


def read_judgments(path: Path) -> list[JudgeRecord]:
    """Every judgment in the file; a torn last line (a killed run) is dropped and cut off."""
    return jsonl.read(path, JudgeRecord.model_validate, "judgment", repair=True)


def judgeable(plans: list[Trace]) -> list[Trace]:
    """The plans the judge sees: valid and executed."""
    return [t for t in plans if t.valid and t.executed]


def judge_evaluator(llm: LLM, config: BonConfig) -> SkillEvaluator:
    return SkillEvaluator(
        llm, config=EvaluatorConfig(max_steps=config.judge_max_steps, max_tokens=config.judge_max_tokens)
    )


async def judge_missing(
    evaluator: SkillEvaluator,
    grouped: dict[str, list[Trace]],
    config: BonConfig,
    path: Path,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[JudgeRecord]:
    """Run the listwise judge on every (question, N) that has no judgment yet; append each as it finishes."""
    key = config.judge_key()
    have = {(r.question_id, r.n) for r in read_judgments(path) if r.key == key}
    todo = [
        (q, n)
        for q, plans in grouped.items()
        for n in config.judged_ns(len(plans))
        if (q, n) not in have and len(judgeable(plans[:n])) >= 2
    ]
    done = 0
    if on_progress:
        on_progress(done, len(todo))
    sem = asyncio.Semaphore(config.judge_concurrency)

    async def one(q: str, n: int) -> None:
        nonlocal done
        plans = judgeable(grouped[q][:n])
        async with sem:
            start = time.perf_counter()
            j = await evaluator.alistwise(plans[0].question, [trajectory_response(t) for t in plans], kind="trajectory")
            wall = time.perf_counter() - start
        jsonl.append(path, JudgeRecord.of(q, n, key, plans, j, wall))
        done += 1
        if on_progress:
            on_progress(done, len(todo))

    await asyncio.gather(*(one(q, n) for q, n in todo))
    return [r for r in read_judgments(path) if r.key == key]
