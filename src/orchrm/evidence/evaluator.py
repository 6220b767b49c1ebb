"""`SkillEvaluator`: orchrm's one evaluator — pointwise, pairwise (both orders) and listwise judgments.

Flow for every response: cheap rule verifiers of the applicable skills run first (those needing a reference
only when one is given); when that evidence is decisive the LLM is skipped (configurable). Otherwise the
evaluator agent runs (pairwise: once per order) and its judgment joins the rule evidence in the explicit
aggregation of `aggregate.py`. Token usage is counted per judgment and recorded in the LLM's ledger under
`verify`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..errors import ConfigError
from ..llm import LLM
from .agent import AgentConfig, AgentOutcome, EvaluatorAgent, JudgeTask
from .aggregate import (
    Evidence,
    OrderedJudgment,
    aggregate,
    best_index,
    combine_orders,
    combine_pair_preferences,
    pairwise_from_aggregates,
    swap,
    verdict_of,
)
from .execute import as_evidence, run_resource
from .sandbox import SandboxLimits
from .skills import Skill, load_skills


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


class SkillEvaluator:
    """Judges responses with skills; `llm=None` means rule evidence only (a judgment the rules cannot
    decide then comes back with status `error`, never a guessed score)."""

    def __init__(self, llm: LLM | None, skills: Sequence[Skill] | None = None, config: EvaluatorConfig | None = None) -> None:
        self.llm = llm
        self.skills = list(skills) if skills is not None else load_skills()
        self.config = config or EvaluatorConfig()
        c = self.config
        self.agent_config = AgentConfig(
            max_steps=c.max_steps,
            max_tokens=c.max_tokens,
            temperature=c.temperature,
            protocol=c.protocol,
            sandbox=SandboxLimits(cpu_s=c.sandbox_cpu_s, wall_s=c.sandbox_cpu_s * 2 + 2, memory_bytes=c.sandbox_memory_mb * 2**20),
        )
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- evidence ----------------------------------------------------------------------------------

    def applicable(self, kind: str, mode: str) -> list[Skill]:
        return [s for s in self.skills if s.applies({kind, mode})]

    async def cheap_evidence(
        self, question: str, response: str, *, kind: str, mode: str, reference: str | None, entry: dict[str, Any] | None
    ) -> list[Evidence]:
        """Run the low-cost verifiers of the applicable skills on one response."""
        tags = {kind, mode}
        ref = reference if self.config.use_references else None
        out = []
        for skill in self.applicable(kind, mode):
            for r in skill.resources:
                if r.type != "verifier" or r.cost not in self.config.prerun_costs:
                    continue
                if not ("any" in r.applies_to or tags & set(r.applies_to)):
                    continue
                if "reference" in r.requires and ref is None:
                    continue
                result = await asyncio.to_thread(
                    run_resource, skill, r, response, reference=ref, question=question, entry=entry, limits=self.agent_config.sandbox
                )
                if result.verdict != "abstain":
                    out.append(as_evidence(r, result))
        return out

    def _agent(self) -> EvaluatorAgent:
        if self.llm is None:
            raise ConfigError("this judgment needs an LLM: rule evidence alone did not decide it")
        return EvaluatorAgent(self.llm, self.skills, self.agent_config)

    # --- modes -------------------------------------------------------------------------------------

    async def apointwise(
        self, question: str, response: str, *, kind: str = "any", reference: str | None = None, entry: dict[str, Any] | None = None
    ) -> Judgment:
        ev = await self.cheap_evidence(question, response, kind=kind, mode="pointwise", reference=reference, entry=entry)
        agg = aggregate(ev, strong_weight=self.config.strong_weight)
        if agg.decisive and self.config.skip_llm_when_decisive or self.llm is None:
            return self._pointwise_result(agg, llm_skipped=True, flags=[] if self.llm else ["no_llm"])
        task = JudgeTask("pointwise", question, [response], kind, reference if self.config.use_references else None, entry, {"response": ev})
        outcome = await self._agent().run(task)
        evidence = list(outcome.evidence.get("response", []))
        if outcome.final is not None:
            evidence.append(_llm_evidence(outcome.final, float(outcome.final.get("score", 0.5))))
        agg = aggregate(evidence, strong_weight=self.config.strong_weight)
        return self._pointwise_result(agg, outcome=outcome)

    def _pointwise_result(self, agg: Any, *, outcome: AgentOutcome | None = None, llm_skipped: bool = False, flags: list[str] | None = None) -> Judgment:
        used = list(dict.fromkeys([*agg.used, *(outcome.used_resources if outcome else [])]))
        reason = agg.reason
        if outcome is not None and outcome.final is not None:
            reason = f"{outcome.final.get('reason', '')} | {agg.reason}"
        return Judgment(
            mode="pointwise",
            status="ok" if agg.score is not None else "error",
            score=agg.score,
            confidence=agg.confidence,
            used_resources=used,
            reason=reason,
            llm_skipped=llm_skipped,
            flags=[*(flags or []), *(outcome.flags if outcome else [])],
            errors=agg.errors,
            **_tokens([outcome] if outcome else []),
        )

    async def apairwise(
        self, question: str, a: str, b: str, *, kind: str = "any", reference: str | None = None, entry: dict[str, Any] | None = None
    ) -> Judgment:
        kw = {"kind": kind, "mode": "pairwise", "reference": reference, "entry": entry}
        ev_a, ev_b = await asyncio.gather(self.cheap_evidence(question, a, **kw), self.cheap_evidence(question, b, **kw))
        agg_a, agg_b = aggregate(ev_a, strong_weight=self.config.strong_weight), aggregate(ev_b, strong_weight=self.config.strong_weight)
        rule_v, rule_conf, decisive = pairwise_from_aggregates(agg_a, agg_b, margin=self.config.tie_margin)
        used = list(dict.fromkeys([*agg_a.used, *agg_b.used]))
        errors = [*agg_a.errors, *agg_b.errors]
        if (decisive and self.config.skip_llm_when_decisive) or self.llm is None:
            status = "ok" if agg_a.score is not None and agg_b.score is not None else "error"
            return Judgment(
                mode="pairwise", status=status, verdict=rule_v if status == "ok" else None, scores=[agg_a.score, agg_b.score],
                confidence=rule_conf, used_resources=used, reason=f"A: {agg_a.reason} | B: {agg_b.reason}",
                llm_skipped=True, flags=[] if self.llm else ["no_llm"], errors=errors,
            )  # fmt: skip
        ref = reference if self.config.use_references else None
        agent = self._agent()
        runs = [agent.run(JudgeTask("pairwise", question, [a, b], kind, ref, entry, {"A": ev_a, "B": ev_b}))]
        if self.config.both_orders:
            runs.append(agent.run(JudgeTask("pairwise", question, [b, a], kind, ref, entry, {"A": ev_b, "B": ev_a})))
        outcomes = list(await asyncio.gather(*runs))
        flags = [f"order{i + 1}: {f}" for i, o in enumerate(outcomes) for f in o.flags]
        # Evidence the agents gathered, mapped back to the original labels.
        more_a = [*outcomes[0].evidence.get("A", [])[len(ev_a):], *(outcomes[1].evidence.get("B", [])[len(ev_a):] if len(outcomes) > 1 else [])]
        more_b = [*outcomes[0].evidence.get("B", [])[len(ev_b):], *(outcomes[1].evidence.get("A", [])[len(ev_b):] if len(outcomes) > 1 else [])]
        agg_a = aggregate([*ev_a, *more_a], strong_weight=self.config.strong_weight)
        agg_b = aggregate([*ev_b, *more_b], strong_weight=self.config.strong_weight)
        rule_v, rule_conf, decisive = pairwise_from_aggregates(agg_a, agg_b, margin=self.config.tie_margin)
        rule_p = None if agg_a.score is None or agg_b.score is None else 0.5 + (agg_a.score - agg_b.score) / 2
        finals = [o.final for o in outcomes]
        llm_p, llm_conf = None, 0.0
        if all(f is not None for f in finals):
            judged = [OrderedJudgment(finals[0]["verdict"], _conf(finals[0]))]  # type: ignore[index]
            if len(finals) > 1:
                judged.append(OrderedJudgment(swap(finals[1]["verdict"]), _conf(finals[1])))  # type: ignore[index]
                llm_p, llm_conf, bias = combine_orders(judged[0], judged[1])
                if bias:
                    flags.append("position_bias: the two orders disagreed; counted as a tie")
            else:
                llm_p, llm_conf = (1.0 if judged[0].verdict == "A" else 0.0 if judged[0].verdict == "B" else 0.5), judged[0].confidence
        elif any(f is not None for f in finals):
            flags.append("one_order_only: the other order gave no final answer; its judgment is not used")
        p = combine_pair_preferences(rule_p, decisive, llm_p, llm_conf)
        reasons = [f"order{i + 1}: {f['reason']}" for i, f in enumerate(finals) if f]
        if p is None:
            return Judgment(
                mode="pairwise", status="error", scores=[agg_a.score, agg_b.score], used_resources=used,
                reason="no usable evidence and no LLM verdict", flags=flags, errors=errors, **_tokens(outcomes),
            )  # fmt: skip
        confidence = rule_conf if decisive else (llm_conf if llm_p is not None else rule_conf)
        used = list(dict.fromkeys([*used, *agg_a.used, *agg_b.used, *(r for o in outcomes for r in o.used_resources)]))
        return Judgment(
            mode="pairwise", verdict=verdict_of(p, self.config.tie_margin), scores=[agg_a.score, agg_b.score],
            confidence=round(confidence, 4), used_resources=used, reason=" | ".join([*reasons, f"rules: {rule_v}"]),
            flags=flags, errors=[*agg_a.errors, *agg_b.errors], **_tokens(outcomes),
        )  # fmt: skip

    async def alistwise(
        self, question: str, responses: Sequence[str], *, kind: str = "any", reference: str | None = None, entry: dict[str, Any] | None = None
    ) -> Judgment:
        """Pointwise judgments of every response; the best is the highest score (ties: the first, flagged)."""
        if len(responses) < 2:
            raise ConfigError("listwise judging needs at least two responses")
        each = await asyncio.gather(*(self.apointwise(question, r, kind=kind, reference=reference, entry=entry) for r in responses))
        scores = [j.score for j in each]
        best, conf, tie = best_index(scores)
        flags = [f"response{i}: {f}" for i, j in enumerate(each) for f in j.flags] + (["tie_for_best: the first is chosen"] if tie else [])
        return Judgment(
            mode="listwise", status="ok" if best is not None else "error", best=best, scores=scores, confidence=conf,
            used_resources=list(dict.fromkeys(r for j in each for r in j.used_resources)),
            reason=f"best score {scores[best] if best is not None else None}", llm_skipped=all(j.llm_skipped for j in each),
            flags=flags, errors=[e for j in each for e in j.errors],
            prompt_tokens=sum(j.prompt_tokens for j in each), completion_tokens=sum(j.completion_tokens for j in each),
            llm_calls=sum(j.llm_calls for j in each),
        )  # fmt: skip

    # --- sync forms ----------------------------------------------------------------------------------

    def _run(self, coro: Any) -> Any:
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def pointwise(self, question: str, response: str, **kw: Any) -> Judgment:
        return self._run(self.apointwise(question, response, **kw))

    def pairwise(self, question: str, a: str, b: str, **kw: Any) -> Judgment:
        return self._run(self.apairwise(question, a, b, **kw))

    def listwise(self, question: str, responses: Sequence[str], **kw: Any) -> Judgment:
        return self._run(self.alistwise(question, responses, **kw))

    def close(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()


def _conf(final: dict[str, Any]) -> float:
    return max(0.0, min(1.0, float(final.get("confidence", 0.5))))


def _llm_evidence(final: dict[str, Any], score: float) -> Evidence:
    return Evidence(
        source="llm-judgment", impact="evidence", score=max(0.0, min(1.0, score)), verdict="judged",
        reason=str(final.get("reason", ""))[:300], confidence=max(_conf(final), 0.05),
    )  # fmt: skip


def _tokens(outcomes: Sequence[AgentOutcome]) -> dict[str, int]:
    return {
        "prompt_tokens": sum(o.prompt_tokens for o in outcomes),
        "completion_tokens": sum(o.completion_tokens for o in outcomes),
        "llm_calls": sum(o.calls for o in outcomes),
    }
