"""Token accounting: every call's usage, attributed to a category the caller names, summed per run.

A run that keeps its ledger on disk (orchestrator training) appends every usage record to `tokens.jsonl`
(`tokens.rank<N>.jsonl` for process N) and writes their totals to `tokens.json` (`LedgerTotals`). Those names and
the totals' schema are declared here, below both the trainer that writes them and the viewer that must not load
the training stack to read them; `run_ledger` and `read_totals` are their readers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_serializer

from .. import jsonl, safejson
from ..errors import RunFileError
from .types import Completion

#: The categories the pipeline uses. Callers may name others; these are the ones reports order first.
CATEGORIES = ("plan", "execute", "verify", "train")

TOKENS_LOG = "tokens.jsonl"
TOKENS_FILE = "tokens.json"
_RANK_LOG = "tokens.rank{}.jsonl"


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


class TotalsRow(CategoryTotals):
    """A row of `tokens.json`: a category's (or the run's) totals, written with their sums `total_tokens` and
    `spent_tokens` (read back from the counts they sum) and `per_sample_tokens`. A row read from a file written
    before a count was recorded dumps without it, as the file holds it."""

    per_sample_tokens: int | None = Field(
        None,
        description="total_tokens had every sample's prompt been computed on its own (None: a file written before "
        "it was recorded).",
    )

    @model_serializer(mode="wrap")
    def _with_sums(self, handler: Any) -> dict[str, Any]:
        data = {k: v for k, v in handler(self).items() if k in self.model_fields_set}
        per_sample = data.pop("per_sample_tokens", None)
        sums = {"total_tokens": self.total_tokens, "spent_tokens": self.spent_tokens}
        return {**data, **sums, **({} if per_sample is None else {"per_sample_tokens": per_sample})}


class LedgerTotals(BaseModel):
    """`tokens.json`: the totals per category (known categories first) and over all of them."""

    categories: dict[str, TotalsRow]
    total: TotalsRow

    @classmethod
    def of(cls, ledger: TokenLedger) -> LedgerTotals:
        """The ledger's totals, each with `per_sample_tokens`: the count had no sample read a prompt through
        another's pass (`UsageRecord.prompt_shared`)."""
        shared: dict[str, int] = {}
        for rec in ledger.records:
            shared[rec.category] = shared.get(rec.category, 0) + rec.prompt_shared

        def row(t: CategoryTotals, extra: int) -> TotalsRow:
            return TotalsRow(**t.model_dump(), per_sample_tokens=t.total_tokens + extra)

        cats = {k: row(v, shared.get(k, 0)) for k, v in ledger.totals().items()}
        return cls(categories=cats, total=row(ledger.total(), sum(shared.values())))


def ledger_path(run_dir: Path, process_index: int = 0) -> Path:
    """The file process `process_index` appends its usage records to."""
    return run_dir / (TOKENS_LOG if process_index == 0 else _RANK_LOG.format(process_index))


def run_ledger(run_dir: Path) -> TokenLedger:
    """Every usage record of a run on disk, from every process's file (a torn last line is skipped, not cut:
    the file may belong to another process)."""
    ledger = TokenLedger()
    for path in [ledger_path(run_dir), *sorted(run_dir.glob(_RANK_LOG.format("*")))]:
        ledger.add(jsonl.read(path, UsageRecord.model_validate, "usage record"))
    return ledger


def read_totals(run_dir: Path) -> LedgerTotals:
    """A run's `tokens.json`; a missing, unreadable or invalid file is a `RunFileError`."""
    path = run_dir / TOKENS_FILE
    try:
        return LedgerTotals.model_validate(safejson.read(path))
    except (OSError, safejson.UnsafeJSONError, ValidationError) as exc:
        detail = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise RunFileError(f"{path}: not a token totals file ({detail})") from None
