"""Writing a bench's own files so that a kill leaves each whole.

A result file: the new content goes to a hidden sibling, is flushed to disk, then renamed over the target in
one step, so a killed bench leaves the old file or the new one. A measurement log (JSONL): one fsync'd line a
record, and the one line a kill can tear, the last, is dropped on reading. The benches keep these here rather
than import orchrm's own writers (`orchrm.atomic`, `orchrm.jsonl`, internal): a bench imports only orchrm's
public names (tests/test_bench_imports.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def append_jsonl(path: Path, record: BaseModel) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as f:
        f.write(record.model_dump_json().encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())


def read_jsonl(path: Path, parse: Callable[[Any], T], *, repair: bool = False) -> list[T]:
    """Every complete line of `path` through `parse` (none if it is missing). A torn last line is skipped, and
    cut off the file when `repair` (before appending to it)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
        if repair:
            with open(path, "r+b") as f:
                f.truncate(len(data))
    return [parse(json.loads(line)) for line in data.splitlines() if line.strip()]
