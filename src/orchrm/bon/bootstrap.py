"""Intervals over the questions of one run: a percentile bootstrap whose statistics all resample the same question
indices, so differences between methods are paired. Across training runs: `bon/stats.py`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel


class Interval(BaseModel):
    value: float | None
    low: float | None
    high: float | None

    def fmt(self, scale: float = 100.0, digits: int = 1) -> str:
        if self.value is None:
            return "n/a"
        if self.low is None or self.high is None:
            return f"{self.value * scale:.{digits}f}"
        return (
            f"{self.value * scale:.{digits}f} [{self.low * scale:.{digits}f}, {self.high * scale:.{digits}f}]".replace(
                "-0.0", "0.0"
            )
        )


class Bootstrap:
    """Percentile intervals from `resamples` draws of question indices (fixed seed: reports reproduce)."""

    def __init__(self, n_questions: int, resamples: int = 2000, seed: int = 0, level: float = 0.95) -> None:
        self.n = n_questions
        self.level = level
        rng = np.random.default_rng(seed)
        self.idx = rng.integers(0, n_questions, size=(resamples, n_questions)) if n_questions else None

    def interval(self, stat: Callable[..., np.ndarray | float], *columns: Sequence[float]) -> Interval:
        """`stat` maps per-question arrays (shape [q] or, resampled, [B, q]) to a value per row."""
        if not self.n:
            return Interval(value=None, low=None, high=None)
        arrays = [np.asarray(c, dtype=float) for c in columns]
        if any(a.shape != (self.n,) for a in arrays):
            raise ValueError(f"expected {self.n} per-question values, got {[a.shape for a in arrays]}")
        value = float(stat(*[a[None, :] for a in arrays])[0])
        draws = np.asarray(stat(*[a[self.idx] for a in arrays]), dtype=float)
        draws = draws[np.isfinite(draws)]
        if not np.isfinite(value) or draws.size == 0:
            return Interval(value=None if not np.isfinite(value) else value, low=None, high=None)
        tail = (1 - self.level) / 2 * 100
        low, high = np.percentile(draws, [tail, 100 - tail])
        return Interval(value=value, low=float(low), high=float(high))

    def mean(self, xs: Sequence[float]) -> Interval:
        return self.interval(lambda a: a.mean(axis=1), xs)

    def diff(self, a: Sequence[float], b: Sequence[float]) -> Interval:
        """mean(a) - mean(b), paired by question."""
        return self.interval(lambda x, y: x.mean(axis=1) - y.mean(axis=1), a, b)

    def ratio(self, a: Sequence[float], b: Sequence[float]) -> Interval:
        """mean(a) / mean(b), paired by question."""

        def stat(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            den = y.mean(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(den > 0, x.mean(axis=1) / den, np.nan)

        return self.interval(stat, a, b)

    def gap_closed(self, method: Sequence[float], low: Sequence[float], high: Sequence[float]) -> Interval:
        """(method - low) / (high - low): the share of the low->high accuracy gap the method closes."""

        def stat(m: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
            gap = hi.mean(axis=1) - lo.mean(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(gap > 0, (m.mean(axis=1) - lo.mean(axis=1)) / gap, np.nan)

        return self.interval(stat, method, low, high)
