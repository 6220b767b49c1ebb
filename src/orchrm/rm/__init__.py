"""The Bradley–Terry orchestration reward model: config, training, verified model folders, scoring.

Names are loaded on first use: `orchrm.rm.config` (which the CLI reads for its option defaults) must not pull
in the model and training modules (torch, transformers, the MAS stack) just to print `--help`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backbone import DEFAULT_BACKBONE, resolve_backbone
    from .config import RMConfig
    from .model import ModelCard, RewardModel
    from .reward import RewardContract
    from .train import TrainResult, pairwise_accuracy, train_from_folder, train_reward_model

_HOMES = {
    "DEFAULT_BACKBONE": "backbone",
    "resolve_backbone": "backbone",
    "RMConfig": "config",
    "ModelCard": "model",
    "RewardModel": "model",
    "RewardContract": "reward",
    "TrainResult": "train",
    "pairwise_accuracy": "train",
    "train_from_folder": "train",
    "train_reward_model": "train",
}
__all__ = [  # a literal list, so linters see the lazy names as exported; tests/rm/test_lazy_exports.py
    "DEFAULT_BACKBONE",
    "ModelCard",
    "RMConfig",
    "RewardContract",
    "RewardModel",
    "TrainResult",
    "pairwise_accuracy",
    "resolve_backbone",
    "train_from_folder",
    "train_reward_model",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value
