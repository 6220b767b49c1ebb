"""Aggregation of heterogeneous evidence, in code (Skill-RM keeps it in prose).

Rules, in order:
1. Evidence whose verdict is `error` or `abstain` carries no score and is left out (it is listed in `errors`
   / ignored), never read as a 0.
2. **Strong dominates**: when strong evidence exists, the score is `strong_weight * mean(strong) +
   (1 - strong_weight) * weighted_mean(evidence)`; with the default 0.85 the side of 0.5 always follows
   the strong evidence.
3. **Weighted evidence combines**: without strong evidence, the score is the weight-and-confidence
   weighted mean of the `evidence` items (an LLM judgment is one of them).
4. **Vetoes cap**: a failed veto check caps the score at its `cap` (default 0), whatever else says.
5. `calibration` items never move the score; they are recorded as used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Literal

Impact = Literal["veto", "strong", "evidence", "calibration"]
PairVerdict = Literal["A", "B", "tie"]


@dataclass(frozen=True)
class Evidence:
    """One finding about one response: a verifier result or an LLM judgment, with its decision impact."""

    source: str
    impact: Impact
    score: float | None
    verdict: str = ""
    reason: str = ""
    weight: float = 1.0
    confidence: float = 1.0
    cap: float = 0.0

    @property
    def usable(self) -> bool:
        return self.score is not None and self.verdict not in ("error", "abstain")


@dataclass(frozen=True)
class Aggregate:
    """The combined judgment of one response."""

    score: float | None
    confidence: float
    used: list[str]
    reason: str
    vetoed: bool = False
    decisive: bool = False
    errors: list[str] = field(default_factory=list)


def unit(x: float) -> float:
    """`x` clamped to [0, 1]."""
    return max(0.0, min(1.0, x))


def _wmean(items: Sequence[Evidence]) -> float | None:
    weights = [e.weight * e.confidence for e in items]
    if not items or sum(weights) <= 0:
        return None
    return sum(w * e.score for w, e in zip(weights, items, strict=True)) / sum(weights)  # type: ignore[operator]


def aggregate(evidence: Sequence[Evidence], *, strong_weight: float = 0.85) -> Aggregate:
    """Combine one response's evidence into a 0–1 score, a confidence and the sources used."""
    errors = [f"{e.source}: {e.reason}" for e in evidence if e.verdict == "error"]
    usable = [e for e in evidence if e.usable]
    strong = [e for e in usable if e.impact == "strong"]
    weighted = [e for e in usable if e.impact == "evidence" and e.weight > 0]
    failed_vetoes = [e for e in usable if e.impact == "veto" and e.score is not None and e.score < 0.5]
    used = [e.source for e in usable]
    strong_mean = fmean(e.score for e in strong) if strong else None  # type: ignore[misc]
    ev_mean = _wmean(weighted)

    if strong_mean is not None and ev_mean is not None:
        score: float | None = strong_weight * strong_mean + (1 - strong_weight) * ev_mean
    elif strong_mean is not None:
        score = strong_mean
    else:
        score = ev_mean

    strong_agree = bool(strong) and len({e.score >= 0.5 for e in strong}) == 1  # type: ignore[operator]
    if failed_vetoes:
        cap = min(e.cap for e in failed_vetoes)
        score = cap if score is None else min(score, cap)
        confidence = 0.95
        reason = "vetoed by " + ", ".join(f"{e.source} ({e.reason})" for e in failed_vetoes)
    elif strong:
        confidence = 0.9 if strong_agree else 0.5
        if ev_mean is not None and strong_mean is not None and (ev_mean >= 0.5) != (strong_mean >= 0.5):
            confidence -= 0.1
        reason = "strong evidence: " + "; ".join(f"{e.source}: {e.reason}" for e in strong)
    elif weighted:
        spread = max(e.score for e in weighted) - min(e.score for e in weighted)  # type: ignore[type-var,operator]
        confidence = fmean(e.confidence for e in weighted) * (1 - 0.5 * spread)
        reason = "weighted evidence: " + "; ".join(f"{e.source}={e.score:.2f}" for e in weighted)
    else:
        confidence = 0.0
        reason = "no usable evidence" + (f" ({len(errors)} error(s))" if errors else "")
    return Aggregate(
        score=None if score is None else round(score, 4),
        confidence=round(unit(confidence), 4),
        used=used,
        reason=reason,
        vetoed=bool(failed_vetoes),
        decisive=bool(failed_vetoes) or strong_agree,
        errors=errors,
    )


def preference(verdict: PairVerdict) -> float:
    """P(A is better) implied by a verdict."""
    return {"A": 1.0, "B": 0.0, "tie": 0.5}[verdict]


def verdict_of(p_a: float, margin: float = 0.1) -> PairVerdict:
    """The verdict for a preference for A, with a tie band of ±margin around 0.5."""
    return "A" if p_a > 0.5 + margin else "B" if p_a < 0.5 - margin else "tie"


def swap(verdict: PairVerdict) -> PairVerdict:
    """A verdict given with the responses shown in the other order, mapped back to the original labels."""
    return {"A": "B", "B": "A", "tie": "tie"}[verdict]  # type: ignore[return-value]


@dataclass(frozen=True)
class OrderedJudgment:
    """An LLM's pairwise verdict with the responses in one order (labels already mapped back)."""

    verdict: PairVerdict
    confidence: float

    @classmethod
    def of_final(cls, final: dict, *, swapped: bool = False) -> OrderedJudgment:
        """An agent's or judge's final answer (`verdict`, `confidence`; both required), mapped back to the
        original labels when the responses were shown swapped."""
        verdict = final["verdict"]
        return cls(swap(verdict) if swapped else verdict, unit(float(final["confidence"])))


def combine_orders(first: OrderedJudgment, second: OrderedJudgment) -> tuple[float, float, bool]:
    """Both orders' judgments into (P(A better), confidence, position_bias).

    Agreeing orders keep their mean confidence; disagreeing ones (the verdict followed the position, not
    the content) cancel to a tie with low confidence and a recorded position-bias flag.
    """
    p = (preference(first.verdict) + preference(second.verdict)) / 2
    bias = first.verdict != second.verdict and "tie" not in (first.verdict, second.verdict)
    conf = (first.confidence + second.confidence) / 2
    if bias:
        conf = min(conf, 0.2)
    elif first.verdict != second.verdict:
        conf *= 0.5
    return p, round(conf, 4), bias


POSITION_BIAS = "position_bias: the two orders disagreed; counted as a tie"


def orders_preference(judged: Sequence[OrderedJudgment]) -> tuple[float, float, list[str]]:
    """One or both orders' judgments into (P(A better), confidence, flags): one order is taken as it is,
    two are combined by `combine_orders`."""
    if len(judged) == 1:
        return preference(judged[0].verdict), judged[0].confidence, []
    p, conf, bias = combine_orders(judged[0], judged[1])
    return p, conf, [POSITION_BIAS] if bias else []


def pairwise_from_aggregates(a: Aggregate, b: Aggregate, *, margin: float = 0.1) -> tuple[PairVerdict, float, bool]:
    """A verdict from two pointwise aggregates: (verdict, confidence, decisive).

    Decisive when both sides have decisive rule evidence (strong or veto) and their scores differ by more
    than the margin; then the LLM is not needed.
    """
    if a.score is None or b.score is None:
        return "tie", 0.0, False
    p_a = 0.5 + (a.score - b.score) / 2
    v = verdict_of(p_a, margin / 2)
    decisive = a.decisive and b.decisive and v != "tie"
    return v, round(min(a.confidence, b.confidence) * abs(a.score - b.score), 4), decisive


def combine_pair_preferences(
    rule_p: float | None, rule_decisive: bool, llm_p: float | None, llm_conf: float
) -> float | None:
    """Rule preference and LLM preference into one: decisive rules dominate, otherwise a weighted mean."""
    if rule_p is not None and rule_decisive:
        return rule_p
    parts = [(p, w) for p, w in ((rule_p, 1.0), (llm_p, max(llm_conf, 0.05))) if p is not None]
    if not parts:
        return None
    return sum(p * w for p, w in parts) / sum(w for _, w in parts)


def best_index(scores: Sequence[float | None]) -> tuple[int | None, float, bool]:
    """Listwise: (index of the best score, confidence from the gap to the runner-up, tie flag)."""
    ranked = sorted(((s, i) for i, s in enumerate(scores) if s is not None), key=lambda t: (-t[0], t[1]))
    if not ranked:
        return None, 0.0, False
    if len(ranked) == 1:
        return ranked[0][1], 0.5, False
    gap = ranked[0][0] - ranked[1][0]
    return ranked[0][1], round(min(1.0, gap), 4), gap == 0
