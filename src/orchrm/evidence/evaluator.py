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
from typing import Any

from ..errors import ConfigError
from ..llm import LLM, TokenCount
from ..sandbox import SandboxLimits
from ._usage import judgment_fields, summed
from ._verdicts import PairRules, gathered, llm_evidence, llm_preference
from .agent import AgentConfig, AgentOutcome, EvaluatorAgent, JudgeTask
from .aggregate import (
    Aggregate,
    Evidence,
    aggregate,
    best_index,
    combine_pair_preferences,
    pairwise_from_aggregates,
    verdict_of,
)
from .execute import as_evidence, run_resource
from .judgment import EvaluatorConfig, Judgment
from .skills import Skill, load_skills

# the settings and judgment models moved to `judgment.py`; importing them from here keeps working
__all__ = ["EvaluatorConfig", "Judgment", "SkillEvaluator"]


class SkillEvaluator:
    """Judges responses with skills; `llm=None` means rule evidence only (a judgment the rules cannot
    decide then comes back with status `error`, never a guessed score)."""

    def __init__(
        self, llm: LLM | None, skills: Sequence[Skill] | None = None, config: EvaluatorConfig | None = None
    ) -> None:
        self.llm = llm
        self.skills = list(skills) if skills is not None else load_skills()
        self.config = config or EvaluatorConfig()
        c = self.config
        self.agent_config = AgentConfig(
            max_steps=c.max_steps,
            max_tokens=c.max_tokens,
            temperature=c.temperature,
            protocol=c.protocol,
            sandbox=SandboxLimits(
                cpu_s=c.sandbox_cpu_s, wall_s=c.sandbox_cpu_s * 2 + 2, memory_bytes=c.sandbox_memory_mb * 2**20
            ),
        )
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- evidence ----------------------------------------------------------------------------------

    def applicable(self, kind: str, mode: str) -> list[Skill]:
        return [s for s in self.skills if s.applies({kind, mode})]

    async def cheap_evidence(
        self, question: str, response: str, *, kind: str, mode: str, reference: str | None, entry: dict[str, Any] | None
    ) -> list[Evidence]:
        """Run the low-cost verifiers of the applicable skills on one response."""
        ref = reference if self.config.use_references else None
        out = []
        for skill in self.applicable(kind, mode):
            for r in skill.resources:
                if r.type != "verifier" or r.cost not in self.config.prerun_costs or not r.applies({kind, mode}):
                    continue
                if "reference" in r.requires and ref is None:
                    continue
                result = await asyncio.to_thread(
                    run_resource,
                    skill,
                    r,
                    response,
                    reference=ref,
                    question=question,
                    entry=entry,
                    limits=self.agent_config.sandbox,
                )
                if result.verdict != "abstain":
                    out.append(as_evidence(r, result))
        return out

    def _agent(self) -> EvaluatorAgent:
        if self.llm is None:
            raise ConfigError("this judgment needs an LLM: rule evidence alone did not decide it")
        return EvaluatorAgent(self.llm, self.skills, self.agent_config)

    def _aggregate(self, evidence: Sequence[Evidence]) -> Aggregate:
        return aggregate(evidence, strong_weight=self.config.strong_weight)

    def _pair_rules(self, ev_a: Sequence[Evidence], ev_b: Sequence[Evidence]) -> PairRules:
        a, b = self._aggregate(ev_a), self._aggregate(ev_b)
        return PairRules(a, b, *pairwise_from_aggregates(a, b, margin=self.config.tie_margin))

    # --- modes -------------------------------------------------------------------------------------

    async def apointwise(
        self,
        question: str,
        response: str,
        *,
        kind: str = "any",
        reference: str | None = None,
        entry: dict[str, Any] | None = None,
    ) -> Judgment:
        ev = await self.cheap_evidence(
            question, response, kind=kind, mode="pointwise", reference=reference, entry=entry
        )
        agg = self._aggregate(ev)
        if agg.decisive and self.config.skip_llm_when_decisive or self.llm is None:
            return self._pointwise_result(agg, llm_skipped=True, flags=[] if self.llm else ["no_llm"])
        task = JudgeTask(
            "pointwise",
            question,
            [response],
            kind,
            reference if self.config.use_references else None,
            entry,
            {"response": ev},
        )
        outcome = await self._agent().run(task)
        evidence, flags = list(outcome.evidence.get("response", [])), []
        if outcome.final is not None:
            judged = llm_evidence(outcome.final)
            if judged is None:
                flags.append("final_without_score: the agent's final answer has no score; not used")
            else:
                evidence.append(judged)
        return self._pointwise_result(self._aggregate(evidence), outcome=outcome, flags=flags)

    def _pointwise_result(
        self,
        agg: Aggregate,
        *,
        outcome: AgentOutcome | None = None,
        llm_skipped: bool = False,
        flags: list[str] | None = None,
    ) -> Judgment:
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
            flags=[*(outcome.flags if outcome else []), *(flags or [])],
            errors=agg.errors,
            **judgment_fields(outcome.tokens if outcome else TokenCount()),
        )

    async def apairwise(
        self,
        question: str,
        a: str,
        b: str,
        *,
        kind: str = "any",
        reference: str | None = None,
        entry: dict[str, Any] | None = None,
    ) -> Judgment:
        kw = {"kind": kind, "mode": "pairwise", "reference": reference, "entry": entry}
        ev_a, ev_b = await asyncio.gather(
            self.cheap_evidence(question, a, **kw), self.cheap_evidence(question, b, **kw)
        )
        rules = self._pair_rules(ev_a, ev_b)
        if (rules.decisive and self.config.skip_llm_when_decisive) or self.llm is None:
            status = "ok" if None not in rules.scores else "error"
            return Judgment(
                mode="pairwise",
                status=status,
                verdict=rules.verdict if status == "ok" else None,
                scores=rules.scores,
                confidence=rules.confidence,
                used_resources=rules.used,
                reason=f"A: {rules.a.reason} | B: {rules.b.reason}",
                llm_skipped=True,
                flags=[] if self.llm else ["no_llm"],
                errors=rules.errors,
            )
        ref = reference if self.config.use_references else None
        agent = self._agent()
        runs = [agent.run(JudgeTask("pairwise", question, [a, b], kind, ref, entry, {"A": ev_a, "B": ev_b}))]
        if self.config.both_orders:
            runs.append(agent.run(JudgeTask("pairwise", question, [b, a], kind, ref, entry, {"A": ev_b, "B": ev_a})))
        return self._pairwise_result(rules, ev_a, ev_b, list(await asyncio.gather(*runs)))

    def _pairwise_result(
        self, before: PairRules, ev_a: list[Evidence], ev_b: list[Evidence], outcomes: list[AgentOutcome]
    ) -> Judgment:
        """The rule evidence, what the agent runs added to it, and their verdicts, into one judgment."""
        flags = [f"order{i + 1}: {f}" for i, o in enumerate(outcomes) for f in o.flags]
        more_a, more_b = gathered(outcomes, len(ev_a), len(ev_b))
        rules = self._pair_rules([*ev_a, *more_a], [*ev_b, *more_b])
        llm_p, llm_conf, llm_flags = llm_preference([o.final for o in outcomes])
        flags += llm_flags
        p = combine_pair_preferences(rules.preference, rules.decisive, llm_p, llm_conf)
        tokens = judgment_fields(summed(o.tokens for o in outcomes))
        if p is None:
            return Judgment(
                mode="pairwise",
                status="error",
                scores=rules.scores,
                used_resources=before.used,
                reason="no usable evidence and no LLM verdict",
                flags=flags,
                errors=before.errors,
                **tokens,
            )
        confidence = rules.confidence if rules.decisive else (llm_conf if llm_p is not None else rules.confidence)
        used = list(dict.fromkeys([*before.used, *rules.used, *(r for o in outcomes for r in o.used_resources)]))
        reasons = [f"order{i + 1}: {o.final['reason']}" for i, o in enumerate(outcomes) if o.final]
        return Judgment(
            mode="pairwise",
            verdict=verdict_of(p, self.config.tie_margin),
            scores=rules.scores,
            confidence=round(confidence, 4),
            used_resources=used,
            reason=" | ".join([*reasons, f"rules: {rules.verdict}"]),
            flags=flags,
            errors=rules.errors,
            **tokens,
        )

    async def alistwise(
        self,
        question: str,
        responses: Sequence[str],
        *,
        kind: str = "any",
        reference: str | None = None,
        entry: dict[str, Any] | None = None,
    ) -> Judgment:
        """Pointwise judgments of every response; the best is the highest score (ties: the first, flagged)."""
        if len(responses) < 2:
            raise ConfigError("listwise judging needs at least two responses")
        each = await asyncio.gather(
            *(self.apointwise(question, r, kind=kind, reference=reference, entry=entry) for r in responses)
        )
        scores = [j.score for j in each]
        best, conf, tie = best_index(scores)
        flags = [f"response{i}: {f}" for i, j in enumerate(each) for f in j.flags] + (
            ["tie_for_best: the first is chosen"] if tie else []
        )
        return Judgment(
            mode="listwise",
            status="ok" if best is not None else "error",
            best=best,
            scores=scores,
            confidence=conf,
            used_resources=list(dict.fromkeys(r for j in each for r in j.used_resources)),
            reason=f"best score {scores[best] if best is not None else None}",
            llm_skipped=all(j.llm_skipped for j in each),
            flags=flags,
            errors=[e for j in each for e in j.errors],
            **judgment_fields(summed(j.usage for j in each)),
        )

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
