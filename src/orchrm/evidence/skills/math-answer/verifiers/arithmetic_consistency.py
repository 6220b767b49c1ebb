"""Recompute every arithmetic equality a response writes: `a op b = c`, and chains `a op b = c op d = e`.

Each `=` links the expression on its left to the one on its right; a link whose two sides both evaluate
(digits, + - * / and parentheses only) and contain at least one operation is a step to check. Runs in
orchrm's sandbox: stdlib only, no network, no files outside its scratch directory.
"""

import re

_LATEX = (("\\times", "*"), ("\\cdot", "*"), ("\\div", "/"), ("×", "*"), ("÷", "/"), ("−", "-"), (",", ""))
_ALLOWED = re.compile(r"[-+*/().\d\s]+")
_OP = re.compile(r"\d\s*[-+*/]\s*[-(]?\s*\d")


def _eval(expr):
    expr = expr.strip()
    if not expr or not _ALLOWED.fullmatch(expr) or not re.search(r"\d", expr):
        return None
    try:
        return float(eval(expr, {"__builtins__": {}}, {}))  # digits and operators only, checked above
    except (SyntaxError, ZeroDivisionError, TypeError, ValueError, OverflowError):
        return None


def _longest(segment, from_end):
    """The longest evaluable run at the end (or start) of a segment, as (text, value)."""
    n = len(segment)
    cuts = range(n) if from_end else range(n, 0, -1)
    for i in cuts:
        piece = segment[i:] if from_end else segment[:i]
        value = _eval(piece)
        if value is not None:
            return piece.strip(), value
    return None, None


def _steps(line):
    parts = line.split("=")
    # Each segment links leftwards through the run at its start and rightwards through the run at its end.
    ends = [_longest(seg, from_end=True) for seg in parts]
    starts = [_longest(seg, from_end=False) for seg in parts]
    for i in range(len(parts) - 1):
        (lt, lv), (rt, rv) = ends[i], starts[i + 1]
        if lv is None or rv is None or not (_OP.search(lt) or _OP.search(rt)):
            continue
        yield f"{lt} = {rt}", abs(lv - rv) <= 1e-6 * max(1.0, abs(lv), abs(rv))


def verify(response, reference=None, question=None, **params):
    text = response
    for a, b in _LATEX:
        text = text.replace(a, b)
    checked, wrong = 0, []
    for line in re.split(r"\n|(?<=\D)\.\s", text):
        for step, ok in _steps(line):
            checked += 1
            if not ok:
                wrong.append(step)
    if not checked:
        return {"verdict": "abstain", "score": None, "reason": "no arithmetic steps written"}
    share = 1 - len(wrong) / checked
    verdict = "pass" if not wrong else ("fail" if share == 0 else "partial")
    reason = f"{checked - len(wrong)}/{checked} steps correct" + (f"; wrong: {'; '.join(wrong[:3])}" if wrong else "")
    return {"verdict": verdict, "score": share, "reason": reason}
