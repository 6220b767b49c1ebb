"""What reward-model training measures, below both `train.py` and `trl_setup.py`: one record per epoch, and
pairwise accuracy overall and per source."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class EpochMetrics:
    epoch: int
    accuracy: float | None
    per_source: dict[str, float]
    train_loss: float | None


def accuracy_by_source(
    sources: Sequence[str], chosen: Sequence[float], rejected: Sequence[float]
) -> tuple[float, dict[str, float]]:
    """Share of pairs whose chosen plan outscores the rejected one, overall and per source (ties count as wrong)."""
    wins: dict[str, list[bool]] = defaultdict(list)
    for source, c, r in zip(sources, chosen, rejected, strict=True):
        wins[source].append(bool(c > r))
    every = [w for ws in wins.values() for w in ws]
    return sum(every) / len(every), {s: sum(ws) / len(ws) for s, ws in sorted(wins.items())}
