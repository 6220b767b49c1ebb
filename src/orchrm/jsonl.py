"""Append-only JSONL files that survive a kill: one durable write per record, a torn last line dropped.

Traces and judgments are both written this way, so a run killed at any moment resumes from what its files
hold: every complete line is a record, and the one line a kill can tear is the last.

A finished file may be gzipped (`NAME.jsonl.gz`, how committed results are stored): `read` reads it as the
same records, and nothing is ever appended to it, so a writer beside one refuses until it is unpacked.
"""

from __future__ import annotations

import gzip
import os
import zlib
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
        packed = gz_path(path)
        if not path.exists() and packed.exists():  # appending would start a second file beside the records
            raise RunFileError(f"{packed} is compressed and cannot be appended to", hint=unpack_hint(packed))
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


def gz_path(path: Path) -> Path:
    """Where `path` is stored compressed: `NAME.jsonl` -> `NAME.jsonl.gz`."""
    return path.with_name(path.name + ".gz")


def unpack_hint(packed: Path) -> str:
    return f"unpack it first: gunzip {packed} (in the orchrm repo: python bench/traces.py unpack {packed})"


def _read_bytes(path: Path, repair: bool) -> bytes:
    if path.suffix != ".gz":
        return path.read_bytes()
    if repair:
        raise RunFileError(f"{path} is compressed and is never appended to, so never repaired", hint=unpack_hint(path))
    try:
        return gzip.decompress(path.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise RunFileError(f"{path}: not a readable gzip file ({exc})", hint="restore it or delete it") from None


def read(path: Path, parse: Callable[[Any], T], what: str, *, repair: bool = False) -> list[T]:
    """Every record in the file (none if it is missing), each JSON value passed through `parse`.

    A torn last line is skipped, and cut off the file when `repair`. Any other bad line is a `RunFileError`
    naming the file and line, and nothing is changed. A `.gz` file is read decompressed (a damaged one is a
    `RunFileError` too); `repair` on it is refused, since a compressed file is never appended to.
    """
    if not path.exists():
        return []
    data = _read_bytes(path, repair)
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
