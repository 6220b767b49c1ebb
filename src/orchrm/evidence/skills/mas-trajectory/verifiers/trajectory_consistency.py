"""Support and agreement checks on an executed multi-agent trajectory (runs in orchrm's sandbox).

The response is JSON: {"final_answer": str, "agents": [{"id": str, "output": str}, ...]}
(extra fields are ignored). Anything else: abstain.
"""

import json
import re

_ANSWER = re.compile(r"(?:final\s+answer|answer)\s*(?:is)?\s*[:=]\s*(.+)", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _norm(s):
    return " ".join(re.sub(r"[^\w\s.-]", " ", s.lower()).split()).rstrip(".")


def _answer(text):
    lines = _ANSWER.findall(text or "")
    if lines:
        return _norm(lines[-1])
    nums = _NUMBER.findall(text or "")
    return _norm(nums[-1].replace(",", "")) if nums else None


def verify(response, reference=None, question=None, **params):
    try:
        run = json.loads(response)
        agents = run["agents"]
        final = str(run["final_answer"])
    except (ValueError, KeyError, TypeError):
        return {"verdict": "abstain", "score": None, "reason": "response is not a trajectory JSON"}
    outputs = [str(a.get("output", "")) for a in agents if isinstance(a, dict)]
    if not outputs:
        return {"verdict": "fail", "score": 0.0, "reason": "no agent outputs"}
    final_n = _norm(final)
    supported = any(final_n and final_n in _norm(o) for o in outputs)
    answers = [a for a in (_answer(o) for o in outputs) if a]
    distinct = sorted(set(answers))
    agreement = (max(answers.count(a) for a in distinct) / len(answers)) if answers else 1.0
    empty = sum(1 for o in outputs if not o.strip())
    score = 0.5 * float(supported) + 0.5 * agreement - 0.1 * empty
    score = max(0.0, min(1.0, score))
    reason = (
        f"final answer {'supported by' if supported else 'not found in'} the agents' outputs; "
        f"agents' answers {distinct[:4]} (agreement {agreement:.2f}); {empty} empty output(s)"
    )
    verdict = "pass" if score >= 0.9 else "fail" if score <= 0.1 else "partial"
    return {"verdict": verdict, "score": round(score, 4), "reason": reason}
