"""Task sources (questions with gold answers) and the answer-checking their scorers share."""

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
    "ScoringTimeout",
    "exact_match",
    "extract_answer",
    "math_equivalent",
    "normalize_text",
    "numeric_match",
    "parse_number",
    "token_f1",
]
