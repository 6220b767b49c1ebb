"""Pair rows on disk: TRL's preference format (`prompt`, `chosen`, `rejected`) plus orchrm's provenance."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from ..errors import OrchrmError

Source = Literal["correct-over-incorrect", "specialized-over-base", "artifact", "consensus"]
SOURCES: tuple[str, ...] = ("correct-over-incorrect", "specialized-over-base", "artifact", "consensus")

TRAIN_FILE, VAL_FILE, STATS_FILE = "train.jsonl", "val.jsonl", "stats.json"


class PairFileError(OrchrmError):
    """A pairs file or folder that cannot be read."""


class PairRow(BaseModel):
    """One win-lose pair of plans for one question."""

    prompt: str = Field(description="The rendered question.")
    chosen: str = Field(description="The rendered winning plan.")
    rejected: str = Field(description="The rendered losing plan.")
    source: Source
    question_id: str
    task: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


def write_rows(path: Path, rows: list[PairRow]) -> None:
    """Write atomically: a killed write leaves the previous file (or none), never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        for row in rows:
            f.write(row.model_dump_json() + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_rows(path: Path) -> list[PairRow]:
    if not path.is_file():
        raise PairFileError(f"no pairs file at {path}", hint="build one with `orchrm pairs RUN... --out DIR`")
    rows = []
    with open(path) as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rows.append(PairRow.model_validate(json.loads(line)))
            except json.JSONDecodeError as exc:
                raise PairFileError(f"{path}:{lineno}: not JSON ({exc.msg})") from None
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"]) or "(row)"
                raise PairFileError(f"{path}:{lineno}: {where}: {err['msg']}") from None
    return rows


def read_pairs_dir(folder: Path) -> tuple[list[PairRow], list[PairRow]]:
    """(train, val) rows of a pairs folder made by `orchrm pairs`."""
    if not folder.is_dir():
        raise PairFileError(f"{folder} is not a pairs folder", hint="pass the --out folder of `orchrm pairs`")
    val = folder / VAL_FILE
    return read_rows(folder / TRAIN_FILE), (read_rows(val) if val.exists() else [])


def as_dataset(rows: list[PairRow]) -> Any:
    """The rows as a `datasets.Dataset` (metadata as a JSON string, since its shape varies per source)."""
    from datasets import Dataset

    return Dataset.from_list(
        [{**r.model_dump(exclude={"metadata"}), "metadata": json.dumps(r.metadata, sort_keys=True)} for r in rows]
    )
