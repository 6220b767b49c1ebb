"""The task contract: a source of questions with gold answers, its own scorer, and an optional corpus.

Splits are by question: a question's split is a stable hash of its text, so the same question is never in
both train and test, whatever seed or count draws it.
"""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ..errors import ConfigError, OrchrmError

Split = Literal["train", "test"]
TEST_FRACTION = 0.2


class Question(BaseModel):
    """One question of a task. `metadata` carries what the task's scorer needs (never shown to agents)."""

    id: str
    question: str
    answer: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class Retriever(Protocol):
    """A searchable document collection (a task's corpus), as the `search` agent uses it."""

    def search(self, query: str, k: int) -> list[tuple[str, str]]:
        """The top-k (doc_id, text) pairs for a query, best first."""
        ...


@runtime_checkable
class Records(Protocol):
    """A task's structured facts, as the exact `lookup` tool reads them: one attribute of one named entity."""

    def fact(self, entity: str, attribute: str) -> str:
        """The attribute's value as text; an unknown entity or attribute raises `UnknownFact` (never a guess)."""
        ...


class UnknownFact(OrchrmError):
    """A lookup named an entity or an attribute the records do not hold."""


def split_of(text: str, test_fraction: float = TEST_FRACTION) -> Split:
    """`test` for a stable `test_fraction` of question texts, `train` for the rest."""
    h = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64
    return "test" if h < test_fraction else "train"


def short_hash(text: str, n: int = 10) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


class Task:
    """A question source with its scorer. Subclasses implement `_pool` (or `questions`) and `score`."""

    name: str = "task"
    #: The domain hint the orchestrator sees ("math", "retrieval QA", ...).
    domain: ClassVar[str] = "general"
    corpus: Retriever | None = None
    #: The agent types its orchestrator is offered; None: every LLM agent type (`search` only with a corpus).
    agent_types: tuple[str, ...] | None = None

    def questions(self, n: int, *, split: Split = "train", seed: int = 0) -> list[Question]:
        """The first `n` questions of `split`, deterministic in `seed`."""
        if split not in ("train", "test"):
            raise ConfigError(f"unknown split {split!r}; use train or test")
        out: list[Question] = []
        seen: set[str] = set()
        for q in self._pool(seed):
            # Generators repeat themselves (chain_sum does within its first hundred): n questions are n distinct ones.
            if self.split(q) == split and q.id not in seen:
                seen.add(q.id)
                out.append(q)
                if len(out) == n:
                    break
        if len(out) < n:
            raise ConfigError(f"task {self.name} has only {len(out)} {split} questions, asked for {n}")
        return out

    def _pool(self, seed: int):  # noqa: ANN202 (an iterator of Question)
        raise NotImplementedError

    def split(self, question: Question) -> Split:
        """The question's split: by its text's hash (`split_of`) unless the task holds some questions out."""
        return split_of(question.question)

    def score(self, prediction: str | None, question: Question) -> float:
        """A score in [0, 1] for a final answer; `correct` means score >= `correct_at`."""
        raise NotImplementedError

    correct_at: ClassVar[float] = 1.0

    def correct(self, prediction: str | None, question: Question) -> tuple[float, bool]:
        value = self.score(prediction, question)
        return value, value >= self.correct_at
