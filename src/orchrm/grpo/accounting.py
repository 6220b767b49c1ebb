"""Every token of a training run, on disk as it is spent: policy samples under `plan`, the sub-agents of
`--reward execute` under `execute`, a decoder RM's scoring passes under `verify`, the optimisation passes
under `train`.

`LedgerLog` is a `TokenLedger` that appends each usage record to `tokens.jsonl` the moment it is counted
and reads the file back on resume, so tokens spent before a kill -9 stay counted (they were spent). Under
several processes each appends only what it spent, to its own file (`tokens.jsonl` for the main process,
`tokens.rank<N>.jsonl` for process N), so no line is shared and none is counted twice. `tokens.json` holds
the totals over every such file on disk, rewritten at every checkpoint and at the end.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import jsonl
from ..atomic import write_text_atomic
from ..llm.accounting import TokenLedger, UsageRecord
from .timing import StepClock

TOKENS_LOG = "tokens.jsonl"
TOKENS_FILE = "tokens.json"
_RANK_LOG = "tokens.rank{}.jsonl"
POLICY_BACKEND = "transformers"


class LedgerLog(TokenLedger):
    """A ledger whose records are also appended, one durable line each, to a JSONL file."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        super().add(jsonl.read(path, UsageRecord.model_validate, "usage record", repair=True))
        self._writer = jsonl.JsonlWriter(path)

    def add(self, records: Iterable[UsageRecord]) -> None:
        records = list(records)
        with self._lock:
            self._records.extend(records)
            for r in records:
                self._writer.write(r)

    def close(self) -> None:
        self._writer.close()


def totals_json(ledger: TokenLedger) -> str:
    """Per-category totals (with `total_tokens` and `spent_tokens` spelled out) and the grand total."""

    def row(t: Any) -> dict[str, int]:
        return {**t.model_dump(), "total_tokens": t.total_tokens, "spent_tokens": t.spent_tokens}

    out = {"categories": {k: row(v) for k, v in ledger.totals().items()}, "total": row(ledger.total())}
    return json.dumps(out, indent=2) + "\n"


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


def write_totals(run_dir: Path) -> dict[str, Any]:
    """`tokens.json`: the totals of every usage record on disk (`run_ledger`); also returned."""
    text = totals_json(run_ledger(run_dir))
    write_text_atomic(run_dir / TOKENS_FILE, text)
    return json.loads(text)


class Accounted:
    """Wraps a TRL reward function so each sampled plan is counted before it is scored.

    A plan's `plan` usage is its prompt (the dataset's `prompt_tokens`, counted under the policy's chat
    template) and its completion ids. The `train` usage is the same tokens once per optimisation pass
    (`num_iterations`), since each pass reads every sampled sequence. Recorded here because the reward
    function is the one place TRL shows both the prompt columns and the completion ids of every sample.
    """

    def __init__(self, reward: Any, ledger: TokenLedger, model_id: str, num_iterations: int = 1, *,
                 backend: str = POLICY_BACKEND, clock: StepClock | None = None) -> None:  # fmt: skip
        self.reward = reward
        self.ledger = ledger
        self.model_id = model_id
        self.num_iterations = num_iterations
        self.backend = backend
        self.clock = clock
        # TRL names the reward in its logs (`rewards/<name>/mean`) after the wrapped function.
        self.__name__ = getattr(reward, "__name__", type(reward).__name__)

    async def __call__(self, prompts: list, completions: list, completion_ids: list, **kwargs: Any) -> list[float | None]:
        if self.clock is not None:
            self.clock.reward_started()
        prompt_tokens = kwargs.get("prompt_tokens") or [0] * len(completion_ids)
        plan = [
            UsageRecord(category="plan", backend=self.backend, model_id=self.model_id, prompt_tokens=int(p),
                        completion_tokens=len(c), cached=False)
            for p, c in zip(prompt_tokens, completion_ids, strict=True)
        ]  # fmt: skip
        train = [r.model_copy(update={"category": "train"}) for r in plan for _ in range(self.num_iterations)]
        self.ledger.add([*plan, *train])
        out = self.reward(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs)
        result = await out if inspect.isawaitable(out) else out
        if self.clock is not None:
            self.clock.reward_ended(completion_ids)
        return result
