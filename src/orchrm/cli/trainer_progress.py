"""Progress of a transformers trainer's optimiser steps as a `Reporter` stage, and why a trainer stopped early."""

from __future__ import annotations

from typing import Any

from .progress import Reporter

__all__ = ["stop_reason", "trainer_progress"]


def trainer_progress(reporter: Reporter, stage: str, info: Any = None, tokens: Any = None) -> Any:
    """A transformers `TrainerCallback` that reports optimiser steps to `reporter` from the main process:
    `stage` counts steps against `max_steps` from the start of training (a note says the trainer is being
    prepared as soon as the callback is made, the stage's first line comes before the first step, and the
    heartbeat repeats them however long the loading or a step takes), and `info(logs)` (the latest value of every
    key the trainer has logged) adds counters such as the loss or the mean reward; `tokens()` is the run's token
    count (default: the trainer's own `num_input_tokens_seen`, counted when its arguments say
    `include_num_input_tokens_seen`), read at every line. Training verbs pass it instead of TRL's tqdm bar, which
    in a log file is one line of carriage returns."""
    reporter.note(f"{stage}: preparing the trainer (loading the model, tokenizing the data)")  # transformers: seconds
    from transformers import TrainerCallback

    def describe(logs: dict[str, Any]) -> str:
        if info is not None:
            return str(info(logs))
        return f"loss {logs['loss']:.4f}" if isinstance(logs.get("loss"), (int, float)) else ""

    def spent(state: Any) -> int:
        return int(tokens()) if tokens is not None else int(getattr(state, "num_input_tokens_seen", 0) or 0)

    class StepProgress(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.logged: dict[str, Any] = {}
            self.shown = ""

        def report(self, state: Any, shown: str, finished: bool = False) -> None:
            reporter.update(
                stage,
                done=state.global_step,
                total=state.max_steps or None,
                info=shown,
                tokens=lambda: spent(state),
                finished=finished,
            )

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.is_world_process_zero:  # `global_step` is a resumed run's checkpoint
                self.report(state, f"step {state.global_step + 1} running")

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
            if logs and state.is_world_process_zero:
                self.logged.update(logs)
                self.shown = describe(self.logged)

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.is_world_process_zero:
                epoch = f"epoch {state.epoch:.2f}" if state.epoch is not None else ""
                self.report(state, " · ".join(p for p in (epoch, self.shown) if p))

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.is_world_process_zero:  # early stopping ends before max_steps: the last line says so
                self.report(state, " · ".join(p for p in (self.shown, stop_reason(args, state)) if p), finished=True)

    return StepProgress()


def stop_reason(args: Any, state: Any) -> str:
    """Why a trainer ended before its `max_steps`, read from its state ("" when it ran them all): early stopping
    (transformers' `EarlyStoppingCallback`) ends it once `args.metric_for_best_model` has not beaten its best for
    the patience's number of evaluations in a row, so the trailing evaluations that did not beat it are the reason."""
    if not state.max_steps or state.global_step >= state.max_steps:
        return ""
    where = f"stopped early at step {state.global_step} of {state.max_steps}"
    metric = getattr(args, "metric_for_best_model", None)
    if not metric:
        return where
    key = metric if metric.startswith("eval_") else f"eval_{metric}"
    higher = getattr(args, "greater_is_better", True) is not False
    best, best_epoch, stale = None, None, 0
    for logged in state.log_history:
        value = logged.get(key)
        if not isinstance(value, (int, float)):
            continue
        if best is None or (value > best if higher else value < best):
            best, best_epoch, stale = value, logged.get("epoch"), 0
        else:
            stale += 1
    if best is None or not stale:
        return where
    strategy = getattr(args, "eval_strategy", None)
    unit = "epoch" if getattr(strategy, "value", strategy) == "epoch" else "evaluation"
    name = key.removeprefix("eval_").replace("_", " ")
    at = f" at epoch {best_epoch:g}" if isinstance(best_epoch, (int, float)) else ""
    return (
        f"{where}: held-out {name} did not improve for {stale} {unit}{'s' if stale > 1 else ''} (best {best:.3f}{at})"
    )
