"""A log that records when each line was written, and a trainer that takes its time: the fakes behind the marks
that no long command is silent (the first progress line within a third of `--log-every`, none further apart)."""

import io
import time

INTERVAL = 0.2  # stands for `--log-every`'s 30 s: first line within a third of it, then no gap longer than it
DELAY = 0.3  # a heartbeat thread's wake-up on a busy machine: a fixed lateness, not a share of the interval


class Timed(io.StringIO):
    """A stream that keeps `(time.monotonic(), line)` for every line written (the log's own clock is seconds)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[float, str]] = []

    def write(self, s: str) -> int:
        self.lines.extend((time.monotonic(), line) for line in s.splitlines())
        return super().write(s)

    def text(self) -> list[str]:
        return [line for _, line in self.lines]


def gaps(start: float, stream: Timed, end: float) -> list[float]:
    """Seconds from `start` to the first line, between lines, and from the last line to `end`."""
    times = [start, *(t for t, _ in stream.lines), end]
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def slow_training(callbacks: list, *, steps: int, step_s: float, tokens_per_step: int = 0) -> None:
    """A trainer's events through transformers' own `CallbackHandler`, each optimiser step `step_s` long and
    reading `tokens_per_step` tokens (the trainer's `num_input_tokens_seen`)."""
    from transformers import TrainerControl, TrainerState
    from transformers.trainer_callback import CallbackHandler
    from transformers.utils import logging

    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()  # no warning that no DefaultFlowCallback steers: nothing here to steer
    try:
        handler = CallbackHandler(callbacks, None, None, None, None)
    finally:
        logging.set_verbosity(verbosity)
    state, control = TrainerState(max_steps=steps), TrainerControl()
    handler.on_train_begin(None, state, control)
    for _ in range(steps):
        time.sleep(step_s)
        state.global_step += 1
        state.epoch = state.global_step / steps
        state.num_input_tokens_seen += tokens_per_step
        handler.on_log(None, state, control, logs={"loss": 0.5})
        handler.on_step_end(None, state, control)
    handler.on_train_end(None, state, control)
