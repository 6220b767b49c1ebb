"""Bootstrap intervals over questions: accuracies, paired differences and the share of a gap closed.

All statistics of one report resample the same question indices, so differences between methods are paired.
"""

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


def two_way(
    runs: Sequence[Sequence[float]],
    minus: Sequence[Sequence[float]] | None = None,
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Mean accuracy over training runs x questions (`runs[r][q]`, each run on the same questions), with an
    interval that resamples questions and runs together; with `minus`, the difference of two such arms on the
    same questions (questions drawn once for both, each arm's runs drawn on their own). Whatever is random
    inside a run (plan seeds) is already in its per-question values; a difference between training runs is
    what a question-only interval leaves out."""
    a = np.asarray(runs, dtype=float)
    b = None if minus is None else np.asarray(minus, dtype=float)
    if a.ndim != 2 or a.size == 0 or (b is not None and (b.ndim != 2 or b.size == 0 or b.shape[1] != a.shape[1])):
        raise ValueError("two_way needs [runs][questions] arrays over the same questions")
    rng = np.random.default_rng(seed)
    q = rng.integers(0, a.shape[1], size=(resamples, a.shape[1]))

    def draws(x: np.ndarray) -> np.ndarray:  # [B]: each draw's runs (rows) and questions (columns) averaged
        r = rng.integers(0, x.shape[0], size=(resamples, x.shape[0]))
        return x[r[:, :, None], q[:, None, :]].mean(axis=(1, 2))

    value = float(a.mean()) - (float(b.mean()) if b is not None else 0.0)
    d = draws(a) - (draws(b) if b is not None else 0.0)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(d, [tail, 100 - tail])
    return Interval(value=value, low=float(low), high=float(high))
