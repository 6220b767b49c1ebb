"""Tasks from packaged datasets: CHAMP competition math (champ-dataset) and FanOutQA dev (closed-book)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from .base import Question, Task
from .scoring import math_equivalent, normalize_text


class ChampTask(Task):
    """270 competition math problems; answers checked by symbolic equivalence (math-verify)."""

    name = "champ"
    domain = "competition math"

    def _pool(self, seed: int) -> Iterator[Question]:
        import champ_dataset

        problems = sorted(champ_dataset.load("v0").problems.values(), key=lambda p: p.identifier)
        random.Random(f"champ-{seed}").shuffle(problems)
        for p in problems:
            yield Question(
                id=f"champ-{p.identifier}", question=p.text, answer=p.answer, metadata={"category": p.category}
            )

    def score(self, prediction: str | None, question: Question) -> float:
        if prediction is None:
            return 0.0
        return 1.0 if math_equivalent(prediction, question.answer) else 0.0


def answer_leaves(answer: Any) -> list[str]:
    """The atomic strings of a FanOutQA answer (a string, number, list or dict of them)."""
    if isinstance(answer, dict):
        return [leaf for k, v in answer.items() for leaf in (str(k), *answer_leaves(v))]
    if isinstance(answer, list):
        return [leaf for v in answer for leaf in answer_leaves(v)]
    return [str(answer)]


def loose_accuracy(prediction: str, leaves: list[str]) -> float:
    """FanOutQA's loose accuracy: the share of gold answer strings found in the prediction (normalised)."""
    if not leaves:
        return 0.0
    pred = f" {normalize_text(prediction)} "
    return sum(1 for leaf in leaves if f" {normalize_text(leaf)} " in pred) / len(leaves)


class FanOutQATask(Task):
    """FanOutQA dev (310 multi-hop questions over Wikipedia), closed-book: its evidence needs the web."""

    name = "fanoutqa"
    domain = "multi-hop factual QA (closed-book)"
    correct_at = 1.0

    def _pool(self, seed: int) -> Iterator[Question]:
        import fanoutqa

        dev = sorted(fanoutqa.load_dev(), key=lambda q: q.id)
        random.Random(f"fanoutqa-{seed}").shuffle(dev)
        for q in dev:
            leaves = answer_leaves(q.answer)
            gold = q.answer if isinstance(q.answer, str) else "; ".join(leaves)
            yield Question(id=f"fanoutqa-{q.id}", question=q.question, answer=gold, metadata={"leaves": leaves})

    def score(self, prediction: str | None, question: Question) -> float:
        if prediction is None:
            return 0.0
        return loose_accuracy(prediction, question.metadata.get("leaves") or [question.answer])
