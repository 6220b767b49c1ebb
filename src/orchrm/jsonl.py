"""Append-only JSONL files that survive a kill: one durable write per record, a torn last line dropped.

Traces and judgments are both written this way, so a run killed at any moment resumes from what its files
hold: every complete line is a record, and the one line a kill can tear is the last.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from . import safejson
from .errors import RunFileError

T = TypeVar("T")


#: Records are our own writes, so no size bound; depth and numbers are bounded because a file may be edited,
#: copied from elsewhere or damaged, and a bad line must be a one-line error, not a RecursionError.
RECORD_LIMITS = safejson.Limits(max_chars=None, max_depth=64, max_number_chars=100)


class RecordError(ValueError):
    """Raised by a `parse` function for a record it refuses; `read` names the file and line."""


class JsonlWriter:
    """Appends records to a JSONL file, one fsync'd write per record."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "ab")  # noqa: SIM115 (closed in close())

    def write(self, record: BaseModel) -> None:
        # One write per record, so a kill leaves at most one torn line.
        self._fh.write(record.model_dump_json(by_alias=True).encode() + b"\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def append(path: Path, record: BaseModel) -> None:
    """One durable record appended to `path`."""
    with JsonlWriter(path) as writer:
        writer.write(record)


def read(path: Path, parse: Callable[[Any], T], what: str, *, repair: bool = False) -> list[T]:
    """Every record in the file (none if it is missing), each JSON value passed through `parse`.

    A torn last line is skipped, and cut off the file when `repair`. Any other bad line is a `RunFileError`
    naming the file and line, and nothing is changed.
    """
    if not path.exists():
        return []
    data = path.read_bytes()
    torn_at: int | None = None
    if data and not data.endswith(b"\n"):
        torn_at = data.rfind(b"\n") + 1
        data = data[:torn_at]
    records: list[T] = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            records.append(parse(safejson.loads(raw, RECORD_LIMITS)))
        except safejson.UnsafeJSONError as exc:
            raise RunFileError(f"{path}:{lineno}: not a JSON record ({exc})", hint="fix or delete that line") from None
        except RecordError as exc:
            raise RunFileError(f"{path}:{lineno}: {exc}", hint="fix or delete that line") from None
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "record"
            raise RunFileError(
                f"{path}:{lineno}: not a valid {what} ({where}: {err['msg']})", hint="fix or delete that line"
            ) from None
    if torn_at is not None and repair:
        with open(path, "r+b") as fh:
            fh.truncate(torn_at)
    return records
