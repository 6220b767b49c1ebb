"""Experiment trackers the training verbs report to (`--report-to`): TRL's `report_to`, checked before training.

transformers finds out that a tracker's package is missing only once the trainer is built, after the model has
loaded; `tracker_list` says so first, in one line naming the package to install.
"""

from __future__ import annotations

import importlib.util
from typing import Literal, get_args

ReportTo = Literal["none", "tensorboard", "wandb", "trackio"]
TRACKERS: tuple[str, ...] = get_args(ReportTo)
REPORT_TO_HELP = "Where training logs go: none, tensorboard, wandb or trackio (its package must be installed)."
#: The package each tracker needs (transformers also takes tensorboardX for tensorboard).
PACKAGES: dict[str, tuple[str, ...]] = {
    "tensorboard": ("tensorboard", "tensorboardX"),
    "wandb": ("wandb",),
    "trackio": ("trackio",),
}


def tracker_list(name: str) -> list[str]:
    """TRL's `report_to` for `name` ([] for none); a tracker whose package is not installed is a `ConfigError`."""
    from ..errors import ConfigError

    if name not in TRACKERS:
        raise ConfigError(f"--report-to {name!r}: expected one of {', '.join(TRACKERS)}")
    if name == "none":
        return []
    packages = PACKAGES[name]
    if not any(importlib.util.find_spec(p) is not None for p in packages):
        raise ConfigError(f"--report-to {name}: the {packages[0]} package is not installed (pip install {packages[0]})")
    return [name]
