"""Pair rows on disk: TRL's preference format (`prompt`, `chosen`, `rejected`) plus orchrm's provenance.

A pairs folder is one unit: train.jsonl, val.jsonl and stats.json from one build, tied together by
manifest.json (each file's sha256 and row count) and swapped in whole, so a folder never mixes the
training rows of one build with the validation rows of another.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .. import safejson
from ..atomic import open_atomic, recover, replacing_dir
from ..errors import OrchrmError
from ..folders import stamp_folder
from ..hashing import sha256_file
from .render import RENDER_VERSION
from .stats import PairStats

Source = Literal["correct-over-incorrect", "specialized-over-base", "artifact", "consensus", "counterfactual"]
SOURCES: tuple[str, ...] = (
    "correct-over-incorrect",
    "specialized-over-base",
    "artifact",
    "consensus",
    "counterfactual",
)

TRAIN_FILE, VAL_FILE, STATS_FILE, MANIFEST_FILE = "train.jsonl", "val.jsonl", "stats.json", "manifest.json"
PAIRS_FORMAT = "orchrm-pairs"


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


class ManifestEntry(BaseModel):
    sha256: str
    rows: int | None = Field(None, description="Pair rows in a .jsonl file; None for other files.")


class PairsManifest(BaseModel):
    """What a pairs folder holds, written last inside the new folder before it is swapped in."""

    format: Literal["orchrm-pairs"] = PAIRS_FORMAT
    version: Literal[1] = 1
    files: dict[str, ManifestEntry]
    # Absent from folders written before rendering v2: theirs is v1.
    render_version: int = Field(1, description="The plan rendering (`orchrm.pairs.render`) of the rows' text.")


def write_rows(path: Path, rows: list[PairRow]) -> None:
    """Write atomically: a killed write leaves the previous file (or none), never half of one."""
    with open_atomic(path) as f:
        for row in rows:
            f.write(row.model_dump_json() + "\n")


def write_pairs_dir(
    folder: Path, train: list[PairRow], val: list[PairRow], stats: BaseModel, *, render_version: int = RENDER_VERSION
) -> None:
    """Write a whole pairs folder and its manifest (which records the rows' plan rendering) beside `folder`, then
    swap it in at once."""
    with replacing_dir(folder) as tmp:
        write_rows(tmp / TRAIN_FILE, train)
        write_rows(tmp / VAL_FILE, val)
        (tmp / STATS_FILE).write_text(stats.model_dump_json(indent=2) + "\n")
        counts = {TRAIN_FILE: len(train), VAL_FILE: len(val), STATS_FILE: None}
        manifest = PairsManifest(
            files={n: ManifestEntry(sha256=sha256_file(tmp / n), rows=c) for n, c in counts.items()},
            render_version=render_version,
        )
        (tmp / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=2) + "\n")
        stamp_folder(tmp, "pairs")


def read_rows(path: Path) -> list[PairRow]:
    if not path.is_file():
        raise PairFileError(f"no pairs file at {path}", hint="build one with `orchrm pairs RUN... --out DIR`")
    rows = []
    with open(path) as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rows.append(PairRow.model_validate(safejson.loads(line, safejson.FILE)))
            except safejson.UnsafeJSONError as exc:
                raise PairFileError(f"{path}:{lineno}: not acceptable JSON ({exc.reason}, {exc.rule})") from None
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"]) or "(row)"
                raise PairFileError(f"{path}:{lineno}: {where}: {err['msg']}") from None
    return rows


def read_pairs_dir(folder: Path) -> tuple[list[PairRow], list[PairRow]]:
    """(train, val) rows of a pairs folder made by `orchrm pairs`."""
    _, train, val = read_pairs_folder(folder)
    return train, val


def read_pairs_folder(folder: Path) -> tuple[PairsManifest, list[PairRow], list[PairRow]]:
    """A pairs folder's manifest (its rows' rendering among what it says) and its (train, val) rows, verified once."""
    manifest = verify_pairs_dir(folder)
    train, val = read_rows(folder / TRAIN_FILE), read_rows(folder / VAL_FILE)
    for name, rows in ((TRAIN_FILE, train), (VAL_FILE, val)):
        if manifest.files[name].rows != len(rows):
            raise PairFileError(f"{folder / name} has {len(rows)} rows, its manifest says {manifest.files[name].rows}")
    return manifest, train, val


def read_pair_stats(folder: Path) -> PairStats:
    """A pairs folder's `stats.json` (also one written before manifests); an unreadable or invalid file is a
    `PairFileError`."""
    path = folder / STATS_FILE
    try:
        return safejson.read_model(path, PairStats, "(stats)")
    except safejson.InvalidFile as exc:
        raise PairFileError(f"{path}: not a pairs stats file ({exc})") from None


def verify_pairs_dir(folder: Path) -> PairsManifest:
    """Refuse a pairs folder whose files are not exactly the ones its manifest.json names."""
    recover(folder)
    if not folder.is_dir():
        raise PairFileError(f"{folder} is not a pairs folder", hint="pass the --out folder of `orchrm pairs`")
    rebuild = "rebuild it with `orchrm pairs`"
    try:
        manifest = PairsManifest.model_validate(safejson.read(folder / MANIFEST_FILE))
    except FileNotFoundError:
        raise PairFileError(
            f"{folder} has no {MANIFEST_FILE} (made by hand or by an older orchrm)", hint=rebuild
        ) from None
    except (ValidationError, ValueError, OSError) as exc:
        raise PairFileError(
            f"{folder / MANIFEST_FILE} is not a pairs manifest: {str(exc).splitlines()[0]}", hint=rebuild
        ) from None
    for name in (TRAIN_FILE, VAL_FILE, STATS_FILE):
        entry = manifest.files.get(name)
        if entry is None:
            raise PairFileError(f"{folder / MANIFEST_FILE} does not list {name}", hint=rebuild)
        path = folder / name
        if not path.is_file():
            raise PairFileError(f"{path} is missing but listed in its {MANIFEST_FILE}", hint=rebuild)
        if sha256_file(path) != entry.sha256:
            raise PairFileError(
                f"{path} does not match its {MANIFEST_FILE} (sha256 differs): "
                "the folder mixes files of different builds",
                hint=rebuild,
            )
    return manifest


def as_dataset(rows: list[PairRow]) -> Any:
    """The rows as a `datasets.Dataset` (metadata as a JSON string, since its shape varies per source)."""
    from datasets import Dataset

    return Dataset.from_list(
        [{**r.model_dump(exclude={"metadata"}), "metadata": json.dumps(r.metadata, sort_keys=True)} for r in rows]
    )
