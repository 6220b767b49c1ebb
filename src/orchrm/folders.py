"""The stamp that says what an output folder is: `folder.json` with its kind, the layout version and the
orchrm that wrote it.

Every verb that writes a folder stamps it, so a reader (the viewer, a resume, a user's script) tells a
rollout from a train-orchestrator run by what the folder says rather than by which files happen to be there
(both hold a `run.json`). Folders written before stamps existed carry none: `folder_kind` answers None and the
reader keeps its own fallback. A stamp naming a kind this orchrm does not know, or a newer layout, is refused
with the folder's path rather than misread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from . import safejson
from .atomic import write_text_atomic
from .errors import RunFileError
from .version import __version__

STAMP_FILE = "folder.json"

FolderKind = Literal[
    "rollout", "pairs", "reward-model", "bon", "loop", "train-orchestrator", "counterfactual", "import"
]
KINDS: tuple[str, ...] = get_args(FolderKind)

#: The layout version each kind is written with now; a reader refuses a stamp above it.
LAYOUT = 1


class FolderStamp(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: FolderKind
    version: int
    orchrm: str


def stamp_folder(folder: Path, kind: FolderKind) -> None:
    """Write (or rewrite) `folder`'s stamp atomically; the folder must exist."""
    stamp = FolderStamp(kind=kind, version=LAYOUT, orchrm=__version__)
    write_text_atomic(Path(folder) / STAMP_FILE, stamp.model_dump_json(indent=2) + "\n")


def read_stamp(folder: Path) -> FolderStamp | None:
    """`folder`'s stamp, or None when it has none (a folder written before stamps, or not orchrm's)."""
    path = Path(folder) / STAMP_FILE
    if not path.is_file():
        return None
    try:
        stamp = FolderStamp.model_validate(safejson.read(path))
    except (OSError, safejson.UnsafeJSONError, ValidationError) as exc:
        detail = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise RunFileError(
            f"{path}: not an orchrm folder stamp ({detail})", hint=f"kinds: {', '.join(KINDS)}"
        ) from None
    if stamp.version > LAYOUT:
        raise RunFileError(
            f"{path}: a {stamp.kind} folder of layout {stamp.version}, written by orchrm {stamp.orchrm}",
            hint=f"this orchrm ({__version__}) reads layout {LAYOUT}; upgrade orchrm",
        )
    return stamp


def folder_kind(folder: Path) -> str | None:
    """The kind `folder` is stamped with, or None when it carries no stamp."""
    stamp = read_stamp(folder) if Path(folder).is_dir() else None
    return stamp.kind if stamp else None


def require_kind(folder: Path, *kinds: FolderKind) -> None:
    """Refuse a stamped folder of another kind (an unstamped one passes: the caller reads it as before)."""
    kind = folder_kind(folder)
    if kind is not None and kind not in kinds:
        raise RunFileError(f"{folder} is a {kind} folder", hint=f"pass a {' or '.join(kinds)} folder")
