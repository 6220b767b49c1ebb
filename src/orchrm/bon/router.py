"""`router`: a content-blind learned selector — P(right | question text, plan shape) by logistic regression.

The RM reads a question and a plan's text. A router reads the question's words and only the plan's *shape*
(`plan_signature` at every grain of `GRAINS`), never what the plan says. If it matches the RM, the RM's
edge is routing questions to shapes, not reading plans. Features are hashed binary indicators:

- the shape at each grain alone ("shape=search | cot");
- every word uni- and bigram of the question (digits folded to `0`, so numbers do not become vocabulary);
- every such n-gram crossed with the `shape` and `types` signatures ("search | cot × works for"), which is
  what lets the router send one kind of question to one shape and another to another.

It is fitted on the same training rows as the shape prior (`prior.training_rows`). A plan whose `shape`
signature never occurred in training has no learned weight that distinguishes it from any other unseen
shape, so the router falls back to the shape prior's score for it and says so (`RouterScore.fallback`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..mas.plans import Plan
from ..mas.traces import Trace
from .prior import GRAINS, ShapePrior, plan_signature, training_rows

HASH_FEATURES = 2**18
CROSSED = ("shape", "types")  # the grains question n-grams are crossed with
_WORD = re.compile(r"[a-z]+|\d+")


@dataclass(frozen=True)
class RouterScore:
    """A plan's router score, and whether it came from the shape prior because the shape was never seen."""

    value: float
    fallback: bool


def question_ngrams(question: str) -> list[str]:
    """Lower-cased word uni- and bigrams, every digit run folded to "0"."""
    words = ["0" if w.isdigit() else w for w in _WORD.findall(question.lower())]
    return sorted(set(words) | {f"{a} {b}" for a, b in zip(words, words[1:])})


def features(question: str, plan: Plan) -> list[str]:
    """The hashed indicators of one (question, plan) row: shape alone, words alone, words × shape."""
    sigs = {g: plan_signature(plan, g) for g in GRAINS}
    grams = question_ngrams(question)
    out = [f"{g}={sigs[g]}" for g in GRAINS] + [f"w={w}" for w in grams]
    out += [f"{g}={sigs[g]}×{w}" for g in CROSSED for w in grams]
    return out


class RouterInfo(BaseModel):
    """What results.json records about the router: training rows, shapes seen, its L2 weight, whether it fitted."""

    rows: int
    shapes_seen: int
    c: float
    fitted: bool


class Router:
    """Logistic regression (scikit-learn) over `features`, with the shape prior as its fallback."""

    def __init__(self, prior: ShapePrior, model: Any, seen: set[str], rows: int, c: float) -> None:
        self.prior = prior
        self.model = model  # None when training had one outcome only: every plan falls back
        self.seen = seen  # `shape` signatures present in training
        self.rows = rows
        self.c = c

    @classmethod
    def fit(cls, traces: Iterable[Trace], *, prior: ShapePrior, exclude: Iterable[str] = (), c: float = 1.0) -> Router:
        """Fit on the training rows (valid, executed, scored, not held out); `prior` is the fallback."""
        from sklearn.linear_model import LogisticRegression  # imported here: the CLI starts without sklearn

        rows = list(training_rows(traces, exclude))
        seen = {plan_signature(t.plan, "shape") for t in rows if t.plan is not None}
        labels = [int(bool(t.score.correct)) for t in rows if t.score is not None]
        if len(set(labels)) < 2:
            return cls(prior, None, seen, len(rows), c)
        x = _hasher().transform(features(t.question, t.plan) for t in rows if t.plan is not None)
        model = LogisticRegression(C=c, max_iter=2000).fit(x, labels)
        return cls(prior, model, seen, len(rows), c)

    def lookup(self, question: str, plan: Plan) -> RouterScore:
        if self.model is None or plan_signature(plan, "shape") not in self.seen:
            return RouterScore(self.prior.score(plan), fallback=True)
        x = _hasher().transform([features(question, plan)])
        return RouterScore(float(self.model.predict_proba(x)[0, 1]), fallback=False)

    def summary(self) -> RouterInfo:
        return RouterInfo(rows=self.rows, shapes_seen=len(self.seen), c=self.c, fitted=self.model is not None)


def _hasher() -> Any:
    from sklearn.feature_extraction import FeatureHasher

    return FeatureHasher(n_features=HASH_FEATURES, input_type="string", alternate_sign=False)
