"""Task sources (questions with gold answers, each with its own scorer) and the answer-checking they share."""

from .base import Question, Task, split_of
from .corpus import Corpus, Document
from .registry import TASK_HELP, load_task
from .scoring import (
    ScoringTimeout,
    exact_match,
    extract_answer,
    math_equivalent,
    normalize_text,
    numeric_match,
    parse_number,
    token_f1,
)

__all__ = [
    "TASK_HELP",
    "Corpus",
    "Document",
    "Question",
    "ScoringTimeout",
    "Task",
    "exact_match",
    "extract_answer",
    "load_task",
    "math_equivalent",
    "normalize_text",
    "numeric_match",
    "parse_number",
    "split_of",
    "token_f1",
]
