"""Rule verifiers: cheap, deterministic checks that run before any LLM step.

Each verifier is a plain function `(response, reference, **params) -> VerifierResult` wrapping a primitive
from `orchrm.tasks.scoring` (or reasoning-gym's own scorer) with verdict / score / reason semantics.
`run_verifier` is the one way to call them: a verifier that raises comes back as verdict `error` with no
score, so a crashed checker can never look like a wrong answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import safejson
from ..tasks.scoring import (
    ScoringTimeout,
    exact_match,
    extract_answer,
    math_equivalent,
    normalize_text,
    parse_number,
    token_f1,
)

VerdictName = Literal["pass", "fail", "partial", "abstain", "error"]


@dataclass(frozen=True)
class VerifierResult:
    """One verifier's finding. `score` is None exactly when the verdict is `abstain` or `error`."""

    verifier: str
    verdict: VerdictName
    score: float | None
    reason: str
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.score is None) != (self.verdict in ("abstain", "error")):
            raise ValueError(f"verdict {self.verdict!r} with score {self.score!r}: only abstain/error carry no score")
        if self.score is not None and not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score {self.score} is outside [0, 1]")

    @property
    def is_error(self) -> bool:
        return self.verdict == "error"

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, {})}


def _result(name: str, ok: bool, reason: str, **details: Any) -> VerifierResult:
    return VerifierResult(name, "pass" if ok else "fail", 1.0 if ok else 0.0, reason, details=details)


def _abstain(name: str, reason: str) -> VerifierResult:
    return VerifierResult(name, "abstain", None, reason)


def _answer_of(response: str) -> str | None:
    return extract_answer(response)


# --- answer verifiers (need a reference) -------------------------------------------------------------


def math_answer(response: str, reference: str | None, *, timeout_s: float = 5.0, **_: Any) -> VerifierResult:
    """The response's final answer is symbolically equal to the reference (math-verify, killable worker)."""
    if reference is None:
        return _abstain("math_answer", "no reference answer")
    pred = _answer_of(response)
    if pred is None:
        return _result("math_answer", False, "no final answer found in the response")
    ok = math_equivalent(pred, reference, timeout_s=timeout_s)
    return _result(
        "math_answer", ok, f"answer {pred!r} {'equals' if ok else 'differs from'} reference {reference!r}", answer=pred
    )


def numeric_tolerance(
    response: str, reference: str | None, *, rel_tol: float = 1e-6, abs_tol: float = 1e-9, **_: Any
) -> VerifierResult:
    """The final answer is a number within tolerance of a numeric reference."""
    if reference is None or parse_number(reference) is None:
        return _abstain("numeric_tolerance", "reference is not a plain number")
    pred = _answer_of(response)
    value = parse_number(pred) if pred is not None else None
    if value is None:
        return _result("numeric_tolerance", False, f"no numeric final answer (found {pred!r})")
    gold = parse_number(reference)
    assert gold is not None
    ok = abs(value - gold) <= max(rel_tol * max(abs(value), abs(gold)), abs_tol)
    return _result("numeric_tolerance", ok, f"{value:g} vs reference {gold:g}", answer=pred)


def exact_answer(response: str, reference: str | None, *, extract: bool = True, **_: Any) -> VerifierResult:
    """Normalised exact match of the (extracted) answer with the reference."""
    if reference is None:
        return _abstain("exact_answer", "no reference answer")
    pred = (_answer_of(response) if extract else None) or response.strip()
    ok = exact_match(pred, reference) or normalize_text(response.strip()) == normalize_text(reference)
    return _result("exact_answer", ok, f"{pred[:60]!r} {'matches' if ok else 'does not match'} {reference[:60]!r}")


def answer_f1(response: str, reference: str | None, *, pass_at: float = 0.8, **_: Any) -> VerifierResult:
    """Token F1 between the (extracted) answer and the reference; pass at `pass_at`, partial above 0."""
    if reference is None:
        return _abstain("answer_f1", "no reference answer")
    pred = _answer_of(response) or response.strip()
    # The whole response too: extraction picks the last number, which mangles list- or dict-shaped answers
    # (found by checking this verifier on FanOutQA's gold answers). A verbose response loses on precision.
    f1 = max(token_f1(pred, reference), token_f1(response, reference))
    verdict: VerdictName = "pass" if f1 >= pass_at else "partial" if f1 > 0 else "fail"
    return VerifierResult("answer_f1", verdict, round(f1, 4), f"token F1 {f1:.2f} against {reference[:60]!r}")


def reasoning_gym_score(
    response: str, reference: str | None, *, entry: dict[str, Any] | None = None, **_: Any
) -> VerifierResult:
    """reasoning-gym's own scorer for the entry's dataset (entry['metadata']['source_dataset'])."""
    if entry is None:
        return _abstain("reasoning_gym", "no reasoning-gym entry")
    import reasoning_gym

    name = entry.get("metadata", {}).get("source_dataset")
    if not name:
        return _abstain("reasoning_gym", "entry has no metadata.source_dataset")
    scorer = reasoning_gym.get_score_answer_fn(name)
    pred = _answer_of(response) or response.strip()
    score = float(scorer(pred, entry))
    verdict: VerdictName = "pass" if score >= 1.0 else "partial" if score > 0 else "fail"
    return VerifierResult(
        "reasoning_gym", verdict, max(0.0, min(1.0, score)), f"{name} scorer gave {score:g} to {pred[:60]!r}"
    )


# --- format and constraint checks (no reference needed) ----------------------------------------------


def has_answer(response: str, reference: str | None = None, **_: Any) -> VerifierResult:
    """The response states a final answer at all."""
    pred = _answer_of(response)
    return _result("has_answer", pred is not None, f"final answer: {pred!r}" if pred else "no final answer found")


def regex_match(
    response: str, reference: str | None = None, *, pattern: str, must_match: bool = True, **_: Any
) -> VerifierResult:
    """The response matches (or, with must_match=False, avoids) a regular expression."""
    found = re.search(pattern, response, re.MULTILINE) is not None
    ok = found == must_match
    return _result("regex", ok, f"pattern {pattern!r} {'found' if found else 'not found'}")


def json_valid(
    response: str, reference: str | None = None, *, schema: dict[str, Any] | None = None, **_: Any
) -> VerifierResult:
    """The response is JSON (optionally satisfying a JSON schema)."""
    try:
        value = safejson.loads(response)
    except safejson.UnsafeJSONError as exc:
        return _result("json_valid", False, f"not acceptable JSON: {exc.reason} ({exc.rule})")
    if schema is not None:
        import jsonschema

        err = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
        if err is not None:
            return _result("json_valid", False, f"violates schema: {err.message}")
    return _result("json_valid", True, "valid JSON" + (" satisfying the schema" if schema else ""))


def length_within(
    response: str, reference: str | None = None, *, min_words: int = 0, max_words: int | None = None, **_: Any
) -> VerifierResult:
    """The response's word count lies within bounds."""
    n = len(response.split())
    ok = n >= min_words and (max_words is None or n <= max_words)
    return _result("length", ok, f"{n} words (allowed {min_words}..{max_words if max_words is not None else 'inf'})")


def required_keywords(
    response: str, reference: str | None = None, *, keywords: Iterable[str], require_all: bool = True, **_: Any
) -> VerifierResult:
    """The response mentions the keywords (case-insensitive); score is the fraction present."""
    words = list(keywords)
    if not words:
        return _abstain("keywords", "no keywords given")
    low = response.lower()
    present = [w for w in words if w.lower() in low]
    frac = len(present) / len(words)
    ok = frac == 1.0 if require_all else frac > 0
    verdict: VerdictName = "pass" if ok else "partial" if frac > 0 else "fail"
    return VerifierResult(
        "keywords",
        verdict,
        round(frac, 4),
        f"{len(present)}/{len(words)} keywords present",
        details={"missing": [w for w in words if w not in present]},
    )


Verifier = Callable[..., VerifierResult]

#: The built-in rule verifiers, by the name skills refer to them with (`entry: builtin:<name>`).
BUILTIN: dict[str, Verifier] = {
    "math_answer": math_answer,
    "numeric_tolerance": numeric_tolerance,
    "exact_answer": exact_answer,
    "answer_f1": answer_f1,
    "reasoning_gym": reasoning_gym_score,
    "has_answer": has_answer,
    "regex": regex_match,
    "json_valid": json_valid,
    "length": length_within,
    "keywords": required_keywords,
}


def run_verifier(
    verifier: str | Verifier, response: str, reference: str | None = None, **params: Any
) -> VerifierResult:
    """Run one verifier; any exception (including a timeout) becomes verdict `error`, never a score."""
    name = verifier if isinstance(verifier, str) else getattr(verifier, "__name__", "verifier")
    fn = BUILTIN.get(verifier) if isinstance(verifier, str) else verifier
    if fn is None:
        return VerifierResult(name, "error", None, "unknown verifier", error=f"no built-in verifier named {name!r}")
    try:
        result = fn(response, reference, **params)
    except ScoringTimeout as exc:
        return VerifierResult(name, "error", None, "verifier timed out", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a crashed checker is an outcome to record, not a score
        return VerifierResult(name, "error", None, "verifier crashed", error=f"{type(exc).__name__}: {exc}")
    if not isinstance(result, VerifierResult):
        return VerifierResult(name, "error", None, "verifier returned no VerifierResult", error=repr(result)[:200])
    return result


@dataclass(frozen=True)
class CheckerReport:
    """How a verifier did on gold answers: every gold must get full marks."""

    verifier: str
    checked: int
    failures: list[tuple[str, VerifierResult]]

    @property
    def ok(self) -> bool:
        return self.checked > 0 and not self.failures


def check_the_checker(
    verifier: str | Verifier,
    golds: Iterable[tuple[str, str, dict[str, Any]]],
    *,
    as_response: Callable[[str], str] | None = None,
) -> CheckerReport:
    """Run a verifier on (response-from-gold, reference, params) triples; report any gold it does not pass.

    `as_response` turns a gold answer into a response (default: `Answer: <gold>`), so the check also covers
    answer extraction.
    """
    wrap = as_response or (lambda g: f"Answer: {g}")
    failures, n = [], 0
    for gold, reference, params in golds:
        n += 1
        res = run_verifier(verifier, wrap(gold), reference, **params)
        if res.verdict != "pass" or res.score != 1.0:
            failures.append((gold, res))
    name = verifier if isinstance(verifier, str) else getattr(verifier, "__name__", "verifier")
    return CheckerReport(name, n, failures)
