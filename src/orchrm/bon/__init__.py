"""Best-of-N test-time scaling: selection methods, the held-out run, the judge baseline, typed results,
statistics and the report."""

from .auc import within_question_auc
from .blind import ContentBlind
from .candidates import Candidate, Case, Outcome
from .cases import build_cases, plan_lengths
from .compute import compute_results, per_question_rows
from .config import BonConfig
from .judge import JudgeRecord, read_judgments
from .prior import KindPrior, ShapePrior, plan_shape, plan_signature
from .report import write_reports
from .results import BonResults, MethodSummary, RunInfo, read_results, write_results
from .router import Router
from .run import BonProgress, BonResult, abon
from .selection import METHODS, Method
from .stats import Bootstrap, Interval

__all__ = [
    "METHODS",
    "BonConfig",
    "BonProgress",
    "BonResult",
    "BonResults",
    "Bootstrap",
    "Candidate",
    "Case",
    "ContentBlind",
    "Interval",
    "JudgeRecord",
    "KindPrior",
    "Method",
    "MethodSummary",
    "Outcome",
    "Router",
    "RunInfo",
    "ShapePrior",
    "abon",
    "build_cases",
    "compute_results",
    "per_question_rows",
    "plan_lengths",
    "plan_shape",
    "plan_signature",
    "read_judgments",
    "read_results",
    "within_question_auc",
    "write_reports",
    "write_results",
]
