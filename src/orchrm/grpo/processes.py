"""The processes of one training run: one, or several under `accelerate launch --num_processes N` (gloo on
a CPU, NCCL on GPUs), each with its own shard of every step's plans, which it samples, rewards and counts.

What the run folder holds for the whole run is written by the main process alone, once the others are done
with what it covers:

- `run.json` is settled (checked, then written) by the main process before any process opens a file there;
- every process appends its token usage to its own ledger (accounting.py); `tokens.json` and the tokens in
  each checkpoint's seal are summed by the main process from every ledger on disk;
- a checkpoint is sealed once every process has written its part of it (its RNG state);
- the sampled plans of a step are gathered to the main process, which appends them to `samples.jsonl`;
  `steps.jsonl` is the main process's clock, with the step's plans and tokens summed over the processes;
- the adapter and the final `tokens.json` are written after every process has finished training, and every
  process returns once they are complete.

`state` below is accelerate's `PartialState`, the one TRL's trainer uses; with one process its waits are
no-ops and nothing is sent anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import OrchrmError

T = TypeVar("T")


def process_state() -> Any:
    """This process's place in the run (accelerate's `PartialState`, set up as the trainer sets it up)."""
    from accelerate import PartialState

    from .sampler import on_gpu

    return PartialState(cpu=not on_gpu())


def on_main(state: Any, work: Callable[[], T]) -> T:
    """`work()` done by the main process alone while the others wait; every process gets its result, or
    raises the `OrchrmError` it raised (so each exits with the same one line, not a broken connection)."""
    if state.num_processes == 1:
        return work()
    from accelerate.utils import broadcast_object_list

    box: list[Any] = [None]
    if state.is_main_process:
        try:
            box = [(True, work())]
        except OrchrmError as exc:
            box = [(False, exc)]
    broadcast_object_list(box)  # the others wait here until the main process has finished `work`
    done, value = box[0]
    if not done:
        raise value
    return value  # type: ignore[no-any-return]


def gathered(state: Any) -> Callable[[list[T]], list[T]] | None:
    """For several processes: a function every process calls with its own items, returning all processes'
    items in process order (None for one process: there is nothing to gather)."""
    if state.num_processes == 1:
        return None
    from accelerate.utils import gather_object

    return lambda items: list(gather_object(list(items)))
