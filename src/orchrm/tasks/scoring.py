"""Answer-checking primitives every task scorer and rule verifier builds on.

Pure functions over strings, plus math equivalence through math-verify. math-verify's own timeouts use
SIGALRM, which only works on the main thread; we disable them and run it in a worker process that is
killed when it overruns, so a pathological expression can neither hang nor be left running.

`result_matches` grades a final answer's *stated result* as MAS-Orchestra grades math: math-verify's
extraction and equivalence. "825 - 515 = 310" states 310 (what follows its last "=" or "equals"); "825 - 515"
states no result (an expression left unevaluated is not an answer, however sympy would evaluate it), nor
does text holding several numbers ("1 2 3"). Task scorers call it where their own rule is stricter than
the question needs (a generator that wants the bare number).
"""

from __future__ import annotations

import math
import multiprocessing as mp
import re
import string
import threading
from collections import Counter
from fractions import Fraction
from multiprocessing.connection import Connection

from ..errors import OrchrmError


class ScoringTimeout(OrchrmError):
    """An answer comparison did not finish within its time limit."""


_ANSWER_LINE = re.compile(r"(?:final\s+answer|answer)\s*(?:is)?\s*[:=]\s*(.+)", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_EQUALS = re.compile(r"=|\bequals\b", re.IGNORECASE)
_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?(?:/\d+)?%?|-?\.\d+")


def extract_answer(text: str) -> str | None:
    """The short answer in a model's output: the last `Answer: X` line, else the last \\boxed{X}, else the
    last number. None when there is nothing answer-like."""
    if not text or not text.strip():
        return None
    lines = [m.group(1).strip() for m in _ANSWER_LINE.finditer(text)]
    if lines:
        answer = lines[-1]
        boxed = _BOXED.findall(answer)
        answer = boxed[-1] if boxed else answer
        return answer.strip().strip("*").rstrip(".").strip() or None
    boxed = _BOXED.findall(text)
    if boxed:
        return boxed[-1].strip()
    numbers = _NUMBER.findall(text)
    return numbers[-1].strip("$").rstrip("%") if numbers else None


def normalize_text(s: str) -> str:
    """SQuAD-style normalisation: lower case, no punctuation, no articles, single spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def answer_key(answer: str | None) -> str | None:
    """The one key under which equal answers collide, for every vote and agreement in orchrm (a
    self-consistency vote, best-of-N agreement, pair building): a number to 9 significant digits (inside the
    scorers' numeric tolerance), else the normalised text; None for no answer. It never decides correctness:
    the task scorers do."""
    if answer is None or not answer.strip():
        return None
    number = parse_number(answer)
    return f"#{number:.9g}" if number is not None else normalize_text(answer) or None


def exact_match(pred: str, gold: str) -> bool:
    return normalize_text(pred) == normalize_text(gold)


def token_f1(pred: str, gold: str) -> float:
    p, g = normalize_text(pred).split(), normalize_text(gold).split()
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def parse_number(s: str) -> float | None:
    """A plain number in `s` ("1,234", "$5", "12.5%", "3/4", "-2"), or None if `s` is not just a number."""
    t = s.strip().strip("$").replace(",", "").replace(" ", "")
    if t.endswith("%"):
        t = t[:-1]
    if t.startswith("$"):
        t = t[1:]
    try:
        return float(Fraction(t)) if "/" in t else float(t)
    except (ValueError, ZeroDivisionError):
        return None


def numeric_match(pred: str, gold: str, rel_tol: float = 1e-6, abs_tol: float = 1e-9) -> bool | None:
    """True/False when both sides are plain numbers, None when either is not (so callers fall through)."""
    a, b = parse_number(pred), parse_number(gold)
    if a is None or b is None:
        return None
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)


def math_equivalent(pred: str, gold: str, timeout_s: float = 5.0) -> bool:
    """Symbolic equivalence of two answers (LaTeX or plain), with a real, thread-safe time limit."""
    quick = numeric_match(pred, gold)
    if quick is not None:
        return quick
    return _WORKER.verify(pred, gold, timeout_s)


def states_result(answer: str) -> bool:
    """Whether the answer states a computation's result ("825 - 515 = 310", "5 + 0 equals 5")."""
    return _EQUALS.search(answer) is not None


def stated_result(answer: str) -> str:
    """The result an answer states: what follows its last "=" or "equals" ("825 - 515 = 310" -> "310"), else
    all of it."""
    return _EQUALS.split(answer)[-1].strip()


def result_matches(prediction: str, gold: str, timeout_s: float = 5.0) -> bool:
    """Whether the one number a final answer states as its result equals `gold` (math-verify's extraction and
    equivalence, under our own time limit); False when it states no single result."""
    result = stated_result(prediction)
    if len(_NUMBER.findall(result)) != 1:
        return False
    return _WORKER.verify(result, gold, timeout_s, extract=True)


def _as_latex(s: str) -> str:
    # math-verify finds expressions by their LaTeX anchors; a bare "x^2+1" has none.
    return s if "$" in s or "\\boxed" in s or "\\(" in s else f"${s}$"


def _worker_main(conn: Connection) -> None:
    import logging

    from math_verify import parse, verify

    logging.disable(logging.WARNING)  # math-verify warns on every call that we disabled its SIGALRM timeouts

    while True:
        try:
            pred, gold, extract = conn.recv()
        except EOFError:
            return
        try:
            g = parse(_as_latex(gold), parsing_timeout=None)  # type: ignore[arg-type]
            # extract: math-verify finds the answer in free text itself ("310 apples" -> 310), as MAS-Orchestra's grader
            p = parse(pred if extract else _as_latex(pred), parsing_timeout=None)  # type: ignore[arg-type]
            conn.send(("ok", bool(g) and bool(p) and bool(verify(g, p, timeout_seconds=None))))
        except Exception as exc:  # a parser bug must reach the caller as an error, not a verdict
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class _MathWorker:
    """One long-lived process running math-verify; replaced when a comparison overruns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: mp.process.BaseProcess | None = None
        self._conn: Connection | None = None

    def _ensure(self) -> Connection:
        if self._proc is None or not self._proc.is_alive() or self._conn is None:
            ctx = mp.get_context("spawn")
            parent, child = ctx.Pipe()
            self._proc = ctx.Process(target=_worker_main, args=(child,), daemon=True, name="orchrm-math-verify")
            self._proc.start()
            child.close()
            self._conn = parent
            # Pay for importing sympy before the clock of a real comparison starts.
            parent.send(("1", "1", False))
            if not parent.poll(60.0):
                self._kill()
                raise ScoringTimeout("the math-verify worker did not start within 60s")
            parent.recv()
        return self._conn

    def verify(self, pred: str, gold: str, timeout_s: float, *, extract: bool = False) -> bool:
        with self._lock:
            conn = self._ensure()
            conn.send((pred, gold, extract))
            if not conn.poll(timeout_s):
                self._kill()
                raise ScoringTimeout(f"math equivalence of {pred[:40]!r} and {gold[:40]!r} exceeded {timeout_s:g}s")
            try:
                status, value = conn.recv()
            except EOFError:
                self._kill()
                raise ScoringTimeout("the math-verify worker died mid-comparison") from None
        if status == "error":
            raise OrchrmError(f"math-verify failed on {pred[:40]!r} vs {gold[:40]!r}: {value}")
        return bool(value)

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(5)
        self._proc, self._conn = None, None


_WORKER = _MathWorker()
