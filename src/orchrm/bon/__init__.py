"""Best-of-N test-time scaling: selection methods, the held-out run, statistics and the report."""

from .report import write_reports
from .run import BonConfig, BonResult, abon, compute_results
from .selection import METHODS, Candidate, Case, Outcome
from .stats import Bootstrap, Interval

__all__ = [
    "METHODS",
    "BonConfig",
    "BonResult",
    "Bootstrap",
    "Candidate",
    "Case",
    "Interval",
    "Outcome",
    "abon",
    "compute_results",
    "write_reports",
]
