"""Win-lose plan pairs built from execution artifacts, in TRL's preference format."""

from .builder import PairConfig, PairSet, PairStats, build_pairs
from .render import RENDER_VERSION, render_plan, render_question
from .rows import (
    SOURCES,
    PairFileError,
    PairRow,
    as_dataset,
    read_pairs_dir,
    read_rows,
    write_pairs_dir,
    write_rows,
)

__all__ = [
    "RENDER_VERSION",
    "SOURCES",
    "PairConfig",
    "PairFileError",
    "PairRow",
    "PairSet",
    "PairStats",
    "as_dataset",
    "build_pairs",
    "read_pairs_dir",
    "read_rows",
    "render_plan",
    "render_question",
    "write_pairs_dir",
    "write_rows",
]
