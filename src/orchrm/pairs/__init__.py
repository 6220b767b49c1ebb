"""Win-lose plan pairs built from execution artifacts, in TRL's preference format."""

from .builder import PairConfig, PairSet, build_pairs
from .counterfactual import (
    CounterfactualConfig,
    acollect_counterfactuals,
    load_counterfactual,
)
from .edit_kinds import EDIT_KINDS
from .edits import Edit, edit_plan
from .render import RENDER_VERSION, render_plan, render_question
from .rows import (
    MANIFEST_FILE,
    SOURCES,
    STATS_FILE,
    TRAIN_FILE,
    VAL_FILE,
    PairFileError,
    PairRow,
    as_dataset,
    read_pair_stats,
    read_pairs_dir,
    read_rows,
    write_pairs_dir,
    write_rows,
)
from .stats import EditCount, PairStats

__all__ = [
    "EDIT_KINDS",
    "MANIFEST_FILE",
    "RENDER_VERSION",
    "SOURCES",
    "STATS_FILE",
    "TRAIN_FILE",
    "VAL_FILE",
    "CounterfactualConfig",
    "Edit",
    "EditCount",
    "PairConfig",
    "PairFileError",
    "PairRow",
    "PairSet",
    "PairStats",
    "acollect_counterfactuals",
    "as_dataset",
    "build_pairs",
    "edit_plan",
    "load_counterfactual",
    "read_pair_stats",
    "read_pairs_dir",
    "read_rows",
    "render_plan",
    "render_question",
    "write_pairs_dir",
    "write_rows",
]
