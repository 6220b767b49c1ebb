"""Does plan content decide, and does a selector read it? Measured among plans of one shape.

A selector that only chooses a shape (a router) cannot tell two `search | python` plans apart; what separates
them is what they say. Three measures, all over held-out questions' valid, executed plans:

- **content headroom** of a question: among the plans of its most successful shape, P(at least one right)
  − mean right. High when the right shape is sampled with content that sometimes works and sometimes not; a
  question without a valid plan counts 0. Averaged over all questions, with a bootstrap interval.
- **same-shape pairs**: (right, wrong) plans of one question and one shape. Pairs where either plan copies
  the orchestrator prompt's worked examples (an example's entity or number the question does not hold) are
  counted apart: a copied example is an artifact a model can learn without reading the task.
- **same-shape AUC** of a method's score: on each question's clean same-shape pairs, the share the score
  orders right (ties 1/2); its mean over questions with such pairs, with a bootstrap interval.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from functools import cache

from pydantic import BaseModel

from ..mas.agents.base import PROMPTS
from .bootstrap import Bootstrap, Interval
from .candidates import Candidate, Case

# A name of two or more capitalised words ("Velmor Labs"), a lone capitalised word inside a sentence ("Ann"),
# a number of two digits or more.
_NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)+\b")
_INNER_CAPITAL = re.compile(r"(?<=[a-z,] )[A-Z][a-z]+\b")
_NUMBER = re.compile(r"\b\d{2,}\b")
_NOT_MARKERS = {"Example", "Answer", "Which", "What", "How", "Find", "Add", "Compute", "State", "In"}


@cache
def example_markers() -> frozenset[str]:
    """The entities and numbers of the orchestrator prompts' worked examples (every variant)."""
    text = "\n".join(p.read_text() for p in sorted(PROMPTS.glob("examples_*.md")))
    found = {*_NAME.findall(text), *_INNER_CAPITAL.findall(text), *_NUMBER.findall(text)}
    return frozenset(m for m in found if m not in _NOT_MARKERS)


def copies_examples(inputs: Iterable[str], question: str) -> bool:
    """Whether a plan's agent inputs hold an example's entity or number that the question does not."""
    text = "\n".join(inputs)
    return any(re.search(rf"\b{re.escape(m)}\b", text) and m not in question for m in example_markers())


class SameShapeAuc(Interval):
    n_questions: int
    n_pairs: int


class ContentStats(BaseModel):
    """results.json's `content`: headroom, the same-shape pairs, and each method's AUC on the clean ones."""

    headroom: Interval
    questions: int
    same_shape_pairs: int
    clean_pairs: int  # neither plan copies the prompt's examples
    questions_with_clean_pairs: int
    auc: dict[str, SameShapeAuc]
    # rm's same-shape AUC minus each other method's, paired by question (the same questions and pairs): whether
    # rm orders same-shape plans better than a method that cannot read them is this interval, not two overlapping ones
    rm_minus: dict[str, Interval] = {}


def _by_shape(case: Case) -> dict[str, list[Candidate]]:
    groups: dict[str, list[Candidate]] = defaultdict(list)
    for c in case.valid:
        groups[c.shape or "?"].append(c)
    return groups


def question_headroom(case: Case) -> float:
    """P(any right) − mean right among the plans of the question's most successful shape (0 without one)."""
    groups = _by_shape(case)
    if not groups:
        return 0.0
    best = max(groups.values(), key=lambda g: (sum(c.correct for c in g) / len(g), len(g)))
    return float(any(c.correct for c in best)) - sum(c.correct for c in best) / len(best)


def same_shape_pairs(case: Case, *, clean: bool) -> list[tuple[Candidate, Candidate]]:
    """(right, wrong) pairs of one shape; `clean`: only those where neither plan copies the examples."""
    out = []
    for group in _by_shape(case).values():
        out += [
            (r, w)
            for r in group
            if r.correct
            for w in group
            if not w.correct and not (clean and (r.copies_example or w.copies_example))
        ]
    return out


Scorer = tuple[Callable[[Case], Case], Callable[[Candidate], float]]  # a method's view of a case, its score


def question_same_shape_auc(case: Case, score: Callable[[Candidate], float]) -> float | None:
    """The share of the case's clean same-shape pairs `score` orders right (ties 1/2); None without such pairs."""
    pairs = same_shape_pairs(case, clean=True)
    if not pairs:
        return None
    return sum(1.0 if score(r) > score(w) else 0.5 if score(r) == score(w) else 0.0 for r, w in pairs) / len(pairs)


def same_shape_auc(
    cases: list[Case], score: Callable[[Candidate], float], *, resamples: int = 2000, seed: int = 0
) -> SameShapeAuc:
    values = [a for a in (question_same_shape_auc(c, score) for c in cases) if a is not None]
    n_pairs = sum(len(same_shape_pairs(c, clean=True)) for c in cases)
    iv = Bootstrap(len(values), resamples, seed).mean(values)
    return SameShapeAuc(**iv.model_dump(), n_questions=len(values), n_pairs=n_pairs)


def _per_question(cases: list[Case], scorer: Scorer) -> list[float | None]:
    view, score = scorer
    return [question_same_shape_auc(view(c), score) for c in cases]


def content_stats(
    cases: list[Case], scorers: dict[str, Scorer], *, resamples: int = 2000, seed: int = 0
) -> ContentStats:
    """The content measures over `cases`, and the same-shape AUC of each method in `scorers`."""
    clean = [len(same_shape_pairs(c, clean=True)) for c in cases]
    return ContentStats(
        headroom=Bootstrap(len(cases), resamples, seed).mean([question_headroom(c) for c in cases]),
        questions=len(cases),
        same_shape_pairs=sum(len(same_shape_pairs(c, clean=False)) for c in cases),
        clean_pairs=sum(clean),
        questions_with_clean_pairs=sum(1 for n in clean if n),
        auc={
            name: same_shape_auc([view(c) for c in cases], score, resamples=resamples, seed=seed)
            for name, (view, score) in scorers.items()
        },
        rm_minus=_rm_minus(cases, scorers, resamples=resamples, seed=seed),
    )


def _rm_minus(cases: list[Case], scorers: dict[str, Scorer], *, resamples: int, seed: int) -> dict[str, Interval]:
    """rm's same-shape AUC minus each other method's, paired bootstrap over the questions where both have pairs."""
    if "rm" not in scorers:
        return {}
    rm = _per_question(cases, scorers["rm"])
    out = {}
    for name, scorer in scorers.items():
        if name == "rm":
            continue
        both = [
            (a, b) for a, b in zip(rm, _per_question(cases, scorer), strict=True) if a is not None and b is not None
        ]
        boot = Bootstrap(len(both), resamples, seed)
        out[name] = boot.diff([a for a, _ in both], [b for _, b in both])
    return out
