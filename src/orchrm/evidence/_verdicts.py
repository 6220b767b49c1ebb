"""Turning rule evidence and the agent's final answers into verdicts: the pure half of `SkillEvaluator`,
separate so the evaluator module holds only the flow (which evidence to gather, when to call the agent)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .agent import AgentOutcome
from .aggregate import Aggregate, Evidence, OrderedJudgment, PairVerdict, orders_preference, unit


@dataclass(frozen=True)
class PairRules:
    """Two responses' aggregated rule evidence and the verdict it gives."""

    a: Aggregate
    b: Aggregate
    verdict: PairVerdict
    confidence: float
    decisive: bool

    @property
    def scores(self) -> list[float | None]:
        return [self.a.score, self.b.score]

    @property
    def used(self) -> list[str]:
        return list(dict.fromkeys([*self.a.used, *self.b.used]))

    @property
    def errors(self) -> list[str]:
        return [*self.a.errors, *self.b.errors]

    @property
    def preference(self) -> float | None:
        """P(A better) from the scores alone."""
        return None if self.a.score is None or self.b.score is None else 0.5 + (self.a.score - self.b.score) / 2


def gathered(outcomes: list[AgentOutcome], given_a: int, given_b: int) -> tuple[list[Evidence], list[Evidence]]:
    """The evidence the agent runs added to what they were given, under the original labels (the second
    run was shown the responses swapped)."""
    first = outcomes[0].evidence
    second = outcomes[1].evidence if len(outcomes) > 1 else {}
    more_a = [*first.get("A", [])[given_a:], *second.get("B", [])[given_a:]]
    more_b = [*first.get("B", [])[given_b:], *second.get("A", [])[given_b:]]
    return more_a, more_b


def llm_preference(finals: list[dict[str, Any] | None]) -> tuple[float | None, float, list[str]]:
    """The agent runs' verdicts into (P(A better), confidence, flags); a run without a final answer voids
    the other order's verdict too (one order alone carries the position bias both orders cancel)."""
    if all(f is not None for f in finals):
        orders = [OrderedJudgment.of_final(f, swapped=i == 1) for i, f in enumerate(finals)]  # type: ignore[arg-type]
        return orders_preference(orders)
    if any(f is not None for f in finals):
        return None, 0.0, ["one_order_only: the other order gave no final answer; its judgment is not used"]
    return None, 0.0, []


def llm_evidence(final: dict[str, Any]) -> Evidence | None:
    """A pointwise final answer as evidence; None when it has no score (never a default)."""
    score = final.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float):
        return None
    return Evidence(
        source="llm-judgment",
        impact="evidence",
        score=unit(float(score)),
        verdict="judged",
        reason=str(final.get("reason", ""))[:300],
        confidence=max(unit(float(final["confidence"])), 0.05),
    )
