"""Progress of long commands, readable wherever the output goes.

On a terminal the stages are rich progress bars. When stderr is not a terminal (CI, `nohup`, a pipe into a log)
bars print nothing useful for many minutes, so plain lines are written instead: one when a stage starts, one when
it finishes, and between them a heartbeat thread's line per active stage every `interval` seconds (stage,
done/total, rate, ETA, tokens spent, time elapsed), however long a single step takes. While no stage is active the
heartbeat repeats the latest note (loading a model, say) until a stage starts, so a long command is never silent
for more than `interval` seconds. `--json` writes the same lines as one JSON object each (for scripts), `--quiet`
writes none. Progress always goes to stderr so stdout stays the command's result.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .say import text

#: Seconds between heartbeat lines when stderr is not a terminal.
DEFAULT_INTERVAL_S = 30.0


class Mode(str, Enum):
    bars = "bars"
    lines = "lines"
    json = "json"
    quiet = "quiet"


def choose_mode(*, quiet: bool = False, as_json: bool = False, stream: IO[str] | None = None) -> Mode:
    """`--quiet` wins over `--json`; otherwise bars on a terminal and heartbeat lines anywhere else. The other
    processes of an `accelerate launch` (`RANK` set and not 0) are quiet: the main process reports."""
    if quiet or os.environ.get("RANK", "0") not in ("", "0"):
        return Mode.quiet
    if as_json:
        return Mode.json
    stream = stream if stream is not None else sys.stderr
    return Mode.bars if getattr(stream, "isatty", lambda: False)() else Mode.lines


@dataclass
class Stage:
    """One stage's counters. `done` counts work items (plans, judgments); `base` is what was already done when
    the stage first reported (resumed work), so the rate and ETA measure this sitting only. `meter`, when set,
    is read for the tokens at every line (a heartbeat in the middle of a long step shows what it has spent)."""

    name: str
    total: int | None = None
    done: int = 0
    tokens: int = 0
    info: str = ""
    started: float = field(default_factory=time.monotonic)
    base: int | None = None
    finished: bool = False
    meter: Callable[[], int] | None = None

    def spent(self) -> int:
        """The stage's tokens: the meter's reading (kept as `tokens`), else the last count given."""
        if self.meter is not None:
            self.tokens = self.meter()
        return self.tokens

    def rate_per_min(self, now: float) -> float | None:
        elapsed = now - self.started
        fresh = self.done - (self.base or 0)
        return fresh / elapsed * 60 if elapsed > 0 and fresh > 0 else None

    def eta_s(self, now: float) -> float | None:
        rate = self.rate_per_min(now)
        if rate is None or self.total is None:
            return None
        return max(self.total - self.done, 0) / rate * 60

    def snapshot(self, now: float) -> dict[str, Any]:
        rate, eta = self.rate_per_min(now), self.eta_s(now)
        return {
            "stage": self.name,
            "done": self.done,
            "total": self.total,
            "tokens": self.spent(),
            "rate_per_min": None if rate is None else round(rate, 2),
            "eta_s": None if eta is None else round(eta),
            "elapsed_s": round(now - self.started),
            "info": self.info,
            "finished": self.finished,
        }


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def format_line(snap: dict[str, Any]) -> str:
    """`rollout 45/160 (28%) · 12.0/min · ETA 9m35s · 12,345 tok · 4m10s elapsed · 30 valid`."""
    done, total = snap["done"], snap["total"]
    parts = [f"{snap['stage']} {done}/{total} ({done / total:.0%})" if total else f"{snap['stage']} {done}"]
    parts.append(
        "done" if snap["finished"] else f"{snap['rate_per_min']:.1f}/min" if snap["rate_per_min"] else "starting"
    )
    if snap["eta_s"] is not None and not snap["finished"]:
        parts.append(f"ETA {_duration(snap['eta_s'])}")
    parts.append(f"{snap['tokens']:,} tok")
    parts.append(f"{_duration(snap['elapsed_s'])} elapsed")
    if snap["info"]:
        parts.append(snap["info"])
    return " · ".join(parts)


#: A stage's tokens: a count, or a meter read at every line.
Tokens = int | Callable[[], int]


class Reporter:
    """Stages a command reports on. `update` may be called from any thread; the output depends on the mode."""

    def __init__(self, mode: Mode, *, interval_s: float = DEFAULT_INTERVAL_S, stream: IO[str] | None = None) -> None:
        self.mode = mode
        self.interval_s = interval_s
        self.stream = stream if stream is not None else sys.stderr
        self.stages: dict[str, Stage] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Progress | None = None
        self._bar_ids: dict[str, Any] = {}
        self._note: tuple[str, float] | None = None  # the latest note and when, until a stage starts after it
        #: Where bars print; `note` uses it in every mode but quiet and json. Descriptions, info and notes print
        #: literally (`say.text`): a stage or note may hold a path or a question.
        self.console = Console(file=self.stream, highlight=False, force_terminal=mode == Mode.bars or None)

    def __enter__(self) -> Reporter:
        if self.mode == Mode.bars:
            self._bar = Progress(
                TextColumn("{task.description:<16}", style="bold", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[info]}", markup=False),
                TimeElapsedColumn(),
                console=self.console,
            )
            self._bar.__enter__()
        elif self.mode in (Mode.lines, Mode.json):
            self._thread = threading.Thread(target=self._beat, name="orchrm-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def update(
        self,
        name: str,
        *,
        done: int,
        total: int | None = None,
        tokens: Tokens = 0,
        info: str = "",
        finished: bool = False,
    ) -> None:
        """Set a stage's counters. The first call creates the stage and writes its first line; a stage whose done
        reaches total is finished and writes its last. `tokens` may be a meter, read at every line."""
        with self._lock:
            stage = self.stages.get(name)
            created = stage is None
            if stage is None:
                stage = self.stages[name] = Stage(name, base=done)
                self._note = None  # the note told what came before this stage
            stage.done, stage.total, stage.info = done, total, info
            stage.meter, stage.tokens = (tokens, stage.tokens) if callable(tokens) else (None, tokens)
            just_finished = not stage.finished and (finished or (total is not None and total > 0 and done >= total))
            stage.finished = stage.finished or just_finished
            snap = stage.snapshot(time.monotonic()) if created or just_finished else None
            spent = stage.spent() if snap is None else snap["tokens"]
        if self._bar is not None:
            if name not in self._bar_ids:
                self._bar_ids[name] = self._bar.add_task(name, total=total, info="")
            shown = f"{info} · {spent:,} tok" if info else f"{spent:,} tok"
            self._bar.update(self._bar_ids[name], total=total, completed=done, info=shown)
        elif snap is not None:
            self._emit([snap])

    def note(self, message: str) -> None:
        """A one-off message (a stage change without counters, e.g. loading a model). While no stage is active,
        the heartbeat repeats it with the time since, until a stage starts."""
        with self._lock:
            self._note = (message, time.monotonic())
        self._say(message)

    def _say(self, message: str, elapsed_s: float | None = None) -> None:
        if self.mode == Mode.quiet:
            return
        since = {} if elapsed_s is None else {"elapsed_s": round(elapsed_s)}
        if self.mode == Mode.json:
            self._write(json.dumps({"time": _clock(), "note": message, **since}))
        elif self._bar is not None:
            self._bar.console.print(text(message))
        else:
            self._write(f"[{_clock()}] {message}" + (f" · {_duration(elapsed_s)} elapsed" if since else ""))

    def _beat(self) -> None:
        """Every `interval_s`, on a fixed schedule (a slow write never stretches the gaps): each active stage's
        line, or, when none is active, the latest note's."""
        due = time.monotonic() + self.interval_s
        while not self._stop.wait(max(0.0, due - time.monotonic())):
            now = time.monotonic()
            due = max(due + self.interval_s, now + self.interval_s / 2)
            with self._lock:
                snaps = [s.snapshot(now) for s in self.stages.values() if not s.finished]
                note = None if snaps else self._note
            self._emit(snaps)
            if note is not None:
                self._say(note[0], now - note[1])

    def _emit(self, snaps: list[dict[str, Any]]) -> None:
        for snap in snaps:
            if self.mode == Mode.json:
                self._write(json.dumps({"time": _clock(), **snap}))
            elif self.mode == Mode.lines:
                self._write(f"[{_clock()}] {format_line(snap)}")

    def _write(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken log must not stop the run it reports on
            pass


def _clock() -> str:
    return time.strftime("%H:%M:%S")


def rollout_info(p: Any) -> str:
    """The extra counters of a rollout's `Progress` (questions, valid plans, correct) for a stage's info."""
    return f"{p.questions_done}/{p.questions_total} questions · {p.plans_valid} valid · {p.correct} correct"


def category_meter(ledger: Any, category: str) -> Callable[[], int]:
    """A meter of the tokens `ledger` (an `orchrm.llm.TokenLedger`) has recorded under `category` so far."""
    return lambda: sum(r.prompt_tokens + r.completion_tokens for r in ledger.records if r.category == category)


#: Width of result tables written to a log (not a terminal, no COLUMNS): rich's 80 truncated the tables' cells.
LOG_WIDTH = 160


def result_console(as_json: bool) -> Console:
    """Where a command prints its human-readable result: stdout, or stderr when stdout carries `--json`."""
    console = Console(highlight=False, stderr=as_json)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(highlight=False, stderr=as_json, width=LOG_WIDTH)
    return console
