"""Best-of-N test-time scaling: selection methods, the held-out run, the judge baseline, typed results,
statistics and the report."""

from .auc import question_auc, within_question_auc
from .blind import ContentBlind
from .bootstrap import Bootstrap, Interval
from .candidates import Candidate, Case, Outcome
from .cases import build_cases, plan_lengths
from .compute import compute_results, per_question_rows
from .config import BonConfig, judge_by_default
from .content import copies_examples, question_headroom, question_same_shape_auc, same_shape_pairs
from .judge import JUDGMENTS_FILE, JudgeRecord, read_judgments
from .prior import KindPrior, ShapePrior, plan_shape, plan_signature
from .report import write_reports
from .results import (
    PER_QUESTION_FILE,
    RESULTS_FILE,
    BonResults,
    MethodSummary,
    RunInfo,
    read_per_question,
    read_results,
    write_results,
)
from .router import Router
from .run import BonProgress, BonResult, abon, score_plans
from .selection import HYBRID, METHODS, Context, Method
from .stats import across_runs, compare, equivalence, reading

__all__ = [
    "HYBRID",
    "JUDGMENTS_FILE",
    "METHODS",
    "PER_QUESTION_FILE",
    "RESULTS_FILE",
    "BonConfig",
    "judge_by_default",
    "BonProgress",
    "BonResult",
    "BonResults",
    "Bootstrap",
    "Candidate",
    "Case",
    "ContentBlind",
    "Context",
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
    "across_runs",
    "build_cases",
    "compare",
    "compute_results",
    "copies_examples",
    "equivalence",
    "per_question_rows",
    "plan_lengths",
    "plan_shape",
    "plan_signature",
    "question_auc",
    "question_headroom",
    "question_same_shape_auc",
    "read_judgments",
    "read_per_question",
    "read_results",
    "reading",
    "same_shape_pairs",
    "score_plans",
    "within_question_auc",
    "write_reports",
    "write_results",
]
