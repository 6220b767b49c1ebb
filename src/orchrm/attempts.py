"""Which start of a training run wrote a log record, and the run as it stands, one attempt per step.

A GRPO run resumed from a checkpoint redoes the steps after it that a kill cut short. Its step logs
(`samples.jsonl`, `steps.jsonl`, `draws.jsonl`) are append-only, and the plans, tokens and seconds of a step
cut short were spent, so each log keeps both attempts: every record is stamped with the start of the run that
wrote it (0, then one more per resume), and `latest` is what a reader of the finished run wants. The stamp is
read from each file itself, so the logs need not agree on it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from . import jsonl


class Stepped(Protocol):
    @property
    def step(self) -> int: ...

    @property
    def attempt(self) -> int: ...


S = TypeVar("S", bound=Stepped)


def next_attempt(path: Path, parse: Callable[[Any], Stepped], what: str) -> int:
    """The attempt a run starting now stamps on what it appends to `path`: one past the file's last."""
    return max((r.attempt for r in jsonl.read(path, parse, what)), default=-1) + 1


def latest(records: list[S]) -> list[S]:
    """Each step's records from the last attempt that wrote it, in file order: a resumed run's repeat of a step
    supersedes the attempt a kill cut short."""
    last: dict[int, int] = {}
    for r in records:
        last[r.step] = max(last.get(r.step, r.attempt), r.attempt)
    return [r for r in records if r.attempt == last[r.step]]
