"""The Bradley–Terry orchestration reward model: config, training, verified model folders, scoring, export.

Names are loaded on first use: `orchrm.rm.config` (which the CLI reads for its option defaults) must not pull
in the model and training modules (torch, transformers, the MAS stack) just to print `--help`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backbone import DEFAULT_BACKBONE, backbone_kind, resolve_backbone
    from .config import RMConfig
    from .encoding import kept_plan_chars
    from .export import export_reward_model
    from .model import CARD_FILE, ModelCard, RewardModel, read_card
    from .reward import RewardContract
    from .server import create_app
    from .train import TrainResult, data_hash, pairwise_accuracy, train_from_folder, train_reward_model

_HOMES = {
    "DEFAULT_BACKBONE": "backbone",
    "backbone_kind": "backbone",
    "resolve_backbone": "backbone",
    "RMConfig": "config",
    "kept_plan_chars": "encoding",
    "export_reward_model": "export",
    "CARD_FILE": "model",
    "ModelCard": "model",
    "RewardModel": "model",
    "read_card": "model",
    "RewardContract": "reward",
    "create_app": "server",
    "TrainResult": "train",
    "data_hash": "train",
    "pairwise_accuracy": "train",
    "train_from_folder": "train",
    "train_reward_model": "train",
}
__all__ = [  # a literal list, so linters see the lazy names as exported; tests/rm/test_lazy_exports.py
    "CARD_FILE",
    "DEFAULT_BACKBONE",
    "ModelCard",
    "RMConfig",
    "RewardContract",
    "RewardModel",
    "TrainResult",
    "backbone_kind",
    "create_app",
    "data_hash",
    "export_reward_model",
    "kept_plan_chars",
    "pairwise_accuracy",
    "read_card",
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
