"""Where a training step's time goes: generation, reward, update; one line per step in `steps.jsonl`.

The phases are cut at points every sampler shares: the step starts (`on_step_begin`), the reward function
is called, it returns, the step ends (`on_step_end`). Generation is start -> reward call: sampling (for the
server sampler also the adapter sync, shown apart as `sync_s`, and part of `generation_s`). Reward is the
reward call. Update is reward return -> step end: the loss, the backward pass and the optimiser step. A
step that trains on buffered samples (`num_iterations` > 1) generates nothing and shows update only.
Under several processes the times are the main process's, and the plans and tokens the step's over all
processes (`combine` gathers them; every process's clock must call it, only the main one writes the line).
A resumed run's repeat of a step is a second line, stamped with its attempt (`orchrm.attempts`); `read_steps`
is the run as it stands.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, computed_field

from .. import attempts, jsonl

STEPS_FILE = "steps.jsonl"


class StepTiming(BaseModel):
    step: int = Field(description="The optimiser step this line closes (TRL's global_step after it).")
    sampler: str
    generation_s: float
    sync_s: float = Field(0.0, description="Part of generation: saving, converting and loading the adapter.")
    reward_s: float
    update_s: float
    step_s: float
    plans: int = 0
    completion_tokens: int = 0
    attempt: int = Field(0, ge=0, description="Which start of the run timed it (0, then one more per resume).")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tokens_per_s(self) -> float:
        """Sampled completion tokens per second of generation, sync excluded."""
        sampling = self.generation_s - self.sync_s
        return self.completion_tokens / sampling if sampling > 0 else 0.0


class StepClock:
    """Stamps the phase boundaries of the current step; `callback()` closes each step into `steps.jsonl`."""

    def __init__(
        self, path: Path | None, sampler: str, combine: Callable[[list[Any]], list[Any]] | None = None
    ) -> None:
        self.path = path
        self.sampler = sampler
        self.combine = combine  # every process's items, in process order (processes.gathered)
        self.history: list[StepTiming] = []
        self.attempt = attempts.next_attempt(path, StepTiming.model_validate, "step timing") if path is not None else 0
        self._reset(time.perf_counter())

    def _reset(self, now: float) -> None:
        self._begin = now
        self._reward_start: float | None = None
        self._reward_end: float | None = None
        self._sync = 0.0
        self._plans = 0
        self._tokens = 0

    def begin(self) -> None:
        self._reset(time.perf_counter())

    def add_sync(self, seconds: float) -> None:
        self._sync += seconds

    def reward_started(self) -> None:
        self._reward_start = time.perf_counter()

    def reward_ended(self, completion_ids: list[Any]) -> None:
        self._reward_end = time.perf_counter()
        self._plans += len(completion_ids)
        self._tokens += sum(len(c) for c in completion_ids)

    def end(self, step: int) -> StepTiming:
        now = time.perf_counter()
        start = self._reward_start if self._reward_start is not None else self._begin
        stop = self._reward_end if self._reward_end is not None else start
        counts = (
            self.combine([(self._plans, self._tokens)]) if self.combine is not None else [(self._plans, self._tokens)]
        )
        timing = StepTiming(
            step=step,
            sampler=self.sampler,
            generation_s=start - self._begin,
            sync_s=self._sync,
            reward_s=stop - start,
            update_s=now - stop,
            step_s=now - self._begin,
            plans=sum(p for p, _ in counts),
            completion_tokens=sum(t for _, t in counts),
            attempt=self.attempt,
        )
        self.history.append(timing)
        if self.path is not None:
            jsonl.append(self.path, timing)
        return timing

    def callback(self) -> Any:
        from transformers import TrainerCallback

        clock = self

        class StepTimer(TrainerCallback):  # type: ignore[misc]
            def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                clock.begin()

            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                clock.end(state.global_step)

        return StepTimer()


def read_steps(folder: Path) -> list[StepTiming]:
    """A run folder's step times as the run stands: one line per step, a resumed run's repeat superseding the
    attempt a kill cut short (none if the run wrote no `steps.jsonl`)."""
    return attempts.latest(jsonl.read(folder / STEPS_FILE, StepTiming.model_validate, "step timing"))
