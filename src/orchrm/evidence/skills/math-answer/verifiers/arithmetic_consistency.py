"""Recompute every `a op b = c` (and `a op b op c = d`) step written in a response.

Runs in orchrm's sandbox: stdlib only, no network, no files outside its scratch directory.
"""

import re

_NUM = r"-?\d+(?:\.\d+)?"
_STEP = re.compile(rf"({_NUM}(?:\s*[-+*/x×]\s*{_NUM})+)\s*=\s*({_NUM})")


def _value(expr: str) -> float:
    expr = expr.replace("x", "*").replace("×", "*")
    if not re.fullmatch(r"[-+*/.\d\s]+", expr):
        raise ValueError(expr)
    return eval(expr, {"__builtins__": {}}, {})  # digits and operators only, checked above


def verify(response, reference=None, question=None, **params):
    text = response.replace(",", "")
    steps = _STEP.findall(text)
    if not steps:
        return {"verdict": "abstain", "score": None, "reason": "no arithmetic steps written"}
    wrong = []
    for expr, claimed in steps:
        try:
            if abs(_value(expr) - float(claimed)) > 1e-6 * max(1.0, abs(float(claimed))):
                wrong.append(f"{expr.strip()} = {claimed}")
        except (ValueError, SyntaxError, ZeroDivisionError):
            continue
    share = 1 - len(wrong) / len(steps)
    verdict = "pass" if not wrong else ("fail" if share == 0 else "partial")
    reason = f"{len(steps) - len(wrong)}/{len(steps)} steps correct" + (f"; wrong: {'; '.join(wrong[:3])}" if wrong else "")
    return {"verdict": verdict, "score": share, "reason": reason}
