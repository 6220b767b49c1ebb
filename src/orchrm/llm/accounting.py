"""Token accounting: every call's usage, attributed to a category the caller names, summed per run."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from pydantic import BaseModel, Field

from .types import Completion

#: The categories the pipeline uses. Callers may name others; these are the ones reports order first.
CATEGORIES = ("plan", "execute", "verify", "train")


class UsageRecord(BaseModel):
    """One completion's usage as the ledger keeps it."""

    category: str
    backend: str
    model_id: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    cached_prompt_tokens: int = 0
    prompt_shared: int = Field(
        0,
        description="Prompt tokens this sample read through another's pass (a group's prompt, computed once): "
        "not in prompt_tokens, kept to show what counting per sample would have said.",
    )


class TokenCount(BaseModel):
    """Summed usage of some calls: the one counter behind a trace's per-category tokens and the ledger's totals."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = Field(0, description="Of prompt_tokens, those the server served from its prompt cache.")

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def processed_prompt_tokens(self) -> int:
        """Prompt tokens the server actually computed (billed minus served from its cache)."""
        return self.prompt_tokens - self.cached_prompt_tokens

    def count(self, prompt_tokens: int, completion_tokens: int, cached: bool, cached_prompt_tokens: int = 0) -> None:
        self.calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.cached_calls += int(cached)
        self.cached_prompt_tokens += cached_prompt_tokens


class CategoryTotals(TokenCount):
    """A ledger category's usage. `spent_*` counts only calls that reached a model on this run."""

    spent_prompt_tokens: int = 0
    spent_completion_tokens: int = 0

    @property
    def spent_tokens(self) -> int:
        return self.spent_prompt_tokens + self.spent_completion_tokens

    def add(self, rec: UsageRecord) -> None:
        self.count(rec.prompt_tokens, rec.completion_tokens, rec.cached, rec.cached_prompt_tokens)
        if not rec.cached:
            self.spent_prompt_tokens += rec.prompt_tokens
            self.spent_completion_tokens += rec.completion_tokens


class TokenLedger:
    """Collects usage records; thread- and task-safe. One ledger per run."""

    def __init__(self) -> None:
        self._records: list[UsageRecord] = []
        self._lock = threading.Lock()

    def record(self, category: str, backend: str, model_id: str, completions: Iterable[Completion]) -> None:
        new = [
            UsageRecord(
                category=category,
                backend=backend,
                model_id=model_id,
                prompt_tokens=c.usage.prompt_tokens,
                completion_tokens=c.usage.completion_tokens,
                cached=c.cached,
                cached_prompt_tokens=c.usage.cached_prompt_tokens,
            )
            for c in completions
        ]
        self.add(new)

    def add(self, records: Iterable[UsageRecord]) -> None:
        """Usage that did not come from an `LLM` call (a local policy's samples, training passes)."""
        records = list(records)
        with self._lock:
            self._records.extend(records)

    @property
    def records(self) -> list[UsageRecord]:
        with self._lock:
            return list(self._records)

    def totals(self) -> dict[str, CategoryTotals]:
        """Usage per category, known categories first."""
        out: dict[str, CategoryTotals] = {}
        for rec in self.records:
            out.setdefault(rec.category, CategoryTotals()).add(rec)
        order = {c: i for i, c in enumerate(CATEGORIES)}
        return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

    def total(self) -> CategoryTotals:
        """Usage over all categories."""
        out = CategoryTotals()
        for rec in self.records:
            out.add(rec)
        return out
