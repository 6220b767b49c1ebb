"""Within-question AUC: does a selector's score rank a question's right plans above its wrong ones?

Accuracy at N mixes two things: whether any plan was right (the oracle's business) and whether the selector
found it. The AUC isolates the second. On each held-out question with mixed outcomes (at least one correct
and one wrong valid, executed plan) it is the probability that a random correct plan scores above a random
wrong one, ties counting 1/2; the reported value is its mean over those questions, with a bootstrap interval
over them. Questions where every plan is right, or every plan wrong, say nothing about ranking and are left
out (their number is what `n_questions` does not count).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .bootstrap import Bootstrap
from .candidates import Candidate, Case


def question_auc(case: Case, score: Callable[[Candidate], float]) -> float | None:
    """P(correct plan outranks wrong plan) among the case's valid plans; None without mixed outcomes."""
    right = [score(c) for c in case.valid if c.correct]
    wrong = [score(c) for c in case.valid if not c.correct]
    if not right or not wrong:
        return None
    wins = sum(1.0 if r > w else 0.5 if r == w else 0.0 for r in right for w in wrong)
    return wins / (len(right) * len(wrong))


def within_question_auc(
    cases: list[Case], score: Callable[[Candidate], float], *, resamples: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """{value, low, high, n_questions}: the mean AUC over mixed-outcome questions and its 95% interval."""
    values = [a for a in (question_auc(c, score) for c in cases) if a is not None]
    iv = Bootstrap(len(values), resamples, seed).mean(values)
    return {**iv.model_dump(), "n_questions": len(values)}
