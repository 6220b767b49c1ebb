"""When a saved RM may be reused instead of trained again: same pairs, same settings, made by this orchrm."""

from __future__ import annotations

from pathlib import Path

from ..atomic import recover
from ..errors import OutdatedModel
from .config import RMConfig
from .model import RewardModel

__all__ = ["current_rm"]


def current_rm(folder: Path, train_hash: str, config: RMConfig) -> RewardModel | None:
    """The saved RM when it was trained on exactly these pairs with these settings, else None.

    Only an RM made by an older orchrm is retrained over; one that fails verification (changed, missing or
    extra files, no card) raises, so the evidence of tampering is kept for the user to look at.
    """
    recover(folder)
    if not folder.exists():
        return None
    try:
        rm = RewardModel.load(folder)
    except OutdatedModel:
        return None
    learned = rm.card.config.model_dump(exclude={"device"})  # where it trained is not what it learned
    same = rm.card.training_data_sha256 == train_hash and learned == config.model_dump(exclude={"device"})
    return rm if same else None
