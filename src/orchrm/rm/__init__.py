"""The Bradley–Terry orchestration reward model: config, training, verified model folders, scoring."""

from .backbone import DEFAULT_BACKBONE, resolve_backbone
from .config import RMConfig
from .model import ModelCard, RewardModel
from .train import TrainResult, pairwise_accuracy, train_from_folder, train_reward_model

__all__ = [
    "DEFAULT_BACKBONE",
    "ModelCard",
    "RMConfig",
    "RewardModel",
    "TrainResult",
    "pairwise_accuracy",
    "resolve_backbone",
    "train_from_folder",
    "train_reward_model",
]
