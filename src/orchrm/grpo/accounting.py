"""Every token of a training run, on disk as it is spent: policy samples under `plan`, the sub-agents of
`--reward execute` under `execute`, a decoder RM's scoring passes under `verify`, the optimisation passes
under `train`.

`LedgerLog` is a `TokenLedger` that appends each usage record to `tokens.jsonl` the moment it is counted
and reads the file back on resume, so tokens spent before a kill -9 stay counted (they were spent). Under
several processes each appends only what it spent, to its own file (`tokens.jsonl` for the main process,
`tokens.rank<N>.jsonl` for process N), so no line is shared and none is counted twice. `tokens.json` holds
the totals over every such file on disk, rewritten at every checkpoint and at the end. The files' names, the
totals' schema and their readers are `orchrm.llm.accounting`'s.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any

from .. import jsonl
from ..atomic import write_text_atomic
from ..llm.accounting import TOKENS_FILE, LedgerTotals, TokenLedger, UsageRecord, run_ledger
from .timing import StepClock

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
    """`tokens.json`'s text: per-category totals (with `total_tokens` and `spent_tokens` spelled out) and the
    grand total, each with `per_sample_tokens` beside it (`LedgerTotals`)."""
    return json.dumps(LedgerTotals.of(ledger).model_dump(), indent=2) + "\n"


def write_totals(run_dir: Path) -> dict[str, Any]:
    """`tokens.json`: the totals of every usage record on disk (`run_ledger`); also returned."""
    totals = LedgerTotals.of(run_ledger(run_dir)).model_dump()
    write_text_atomic(run_dir / TOKENS_FILE, json.dumps(totals, indent=2) + "\n")
    return totals


def _first_of_prompt(prompts: list) -> list[bool]:
    """For each sample, whether it is the first of its prompt in the batch (a group shares one prompt)."""
    seen: set[str] = set()
    out = []
    for p in prompts:
        key = p if isinstance(p, str) else json.dumps(p, sort_keys=True, default=str)
        out.append(key not in seen)
        seen.add(key)
    return out


@dataclass(eq=False, repr=False)  # TRL takes it as a function: equal only to itself, with a plain repr
class Accounted:
    """Wraps a TRL reward function so each sampled plan is counted before it is scored.

    A plan's `plan` usage is its prompt (the dataset's `prompt_tokens`, counted under the policy's chat
    template) and its completion ids; its `train` usage is the same tokens once per optimisation pass
    (`num_iterations`). Counted as computed: the update reads a group's prompt once (shared_prompt.py), so
    only the first plan of each distinct prompt carries it under `train`; sampling reads it once too where
    the sampler shares it (`shared_sampling`: llama-server's `n_cmpl`, vLLM's prefix cache), per plan under
    TRL's own generate. The prompt a plan did not pay is kept as `prompt_shared`, so the per-sample count
    stays visible beside it. Plans a diverse group drew and dropped (`unkept_tokens`) are `plan` tokens too.
    Recorded here because the reward function is the one place TRL shows both the prompt columns and the
    completion ids of every sample.
    """

    reward: Any
    ledger: TokenLedger
    model_id: str
    num_iterations: int = 1
    _: KW_ONLY
    backend: str = POLICY_BACKEND
    clock: StepClock | None = None
    shared_sampling: bool = False

    def __post_init__(self) -> None:
        # TRL names the reward in its logs (`rewards/<name>/mean`) after the wrapped function.
        self.__name__ = getattr(self.reward, "__name__", type(self.reward).__name__)

    async def __call__(
        self, prompts: list, completions: list, completion_ids: list, **kwargs: Any
    ) -> list[float | None]:
        if self.clock is not None:
            self.clock.reward_started()
        prompt_tokens = kwargs.get("prompt_tokens") or [0] * len(completion_ids)
        first = _first_of_prompt(prompts)

        def usage(category: str, i: int, shared: bool) -> UsageRecord:
            p = int(prompt_tokens[i])
            paid = p if first[i] or not shared else 0
            return UsageRecord(
                category=category,
                backend=self.backend,
                model_id=self.model_id,
                prompt_tokens=paid,
                completion_tokens=len(completion_ids[i]),
                cached=False,
                prompt_shared=p - paid,
            )

        plan = [usage("plan", i, self.shared_sampling) for i in range(len(completion_ids))]
        # Plans a diverse group drew and did not keep (diverse.py): sampled beside the group's, so paid for.
        unkept = kwargs.get("unkept_tokens") or []
        plan += [
            UsageRecord(
                category="plan",
                backend=self.backend,
                model_id=self.model_id,
                prompt_tokens=0,
                completion_tokens=n,
                cached=False,
            )
            for lengths in unkept
            for n in lengths
        ]
        train = [usage("train", i, True) for i in range(len(completion_ids)) for _ in range(self.num_iterations)]
        self.ledger.add([*plan, *train])
        out = self.reward(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs)
        result = await out if inspect.isawaitable(out) else out
        if self.clock is not None:
            self.clock.reward_ended(completion_ids)
        return result
