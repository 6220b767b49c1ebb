"""Running a skill's verifier resource: built-ins in-process, skill-supplied Python in the sandbox."""

from __future__ import annotations

import json
from typing import Any

from .. import safejson
from ..sandbox import SandboxLimits, run_python
from .aggregate import Evidence
from .skills import Resource, Skill
from .verifiers import VerifierResult, run_verifier

_MARK = "__ORCHRM_VERIFIER_RESULT__"
_HARNESS = f"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("skill_verifier", "verifier.py")
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
inp = json.load(open("input.json"))
out = mod.verify(inp["response"], inp["reference"], inp["question"], **inp["params"])
print("{_MARK}" + json.dumps(out))
"""


def run_resource(
    skill: Skill,
    resource: Resource,
    response: str,
    *,
    reference: str | None = None,
    question: str | None = None,
    entry: dict[str, Any] | None = None,
    limits: SandboxLimits | None = None,
) -> VerifierResult:
    """Run one verifier resource on one response. Missing inputs abstain; crashes and sandbox failures are
    verdict `error`."""
    name = f"{skill.name}/{resource.id}"
    if not resource.runnable or resource.entry is None:
        return VerifierResult(
            name, "error", None, "not runnable", error=f"{resource.id} is a {resource.type}, not a verifier"
        )
    inputs = {"reference": reference, "question": question, "entry": entry}
    missing = [r for r in resource.requires if inputs.get(r) is None]
    if missing:
        return VerifierResult(name, "abstain", None, f"needs {', '.join(missing)}, which this task does not have")
    if resource.entry.startswith("builtin:"):
        params = dict(resource.params)
        if entry is not None and resource.entry == "builtin:reasoning_gym":
            params["entry"] = entry
        res = run_verifier(resource.entry.removeprefix("builtin:"), response, reference, **params)
        return VerifierResult(name, res.verdict, res.score, res.reason, res.error, res.details)
    return _run_script(name, skill, resource, response, reference, question, limits)


def _run_script(
    name: str,
    skill: Skill,
    resource: Resource,
    response: str,
    reference: str | None,
    question: str | None,
    limits: SandboxLimits | None,
) -> VerifierResult:
    assert resource.entry is not None
    source = (skill.root / resource.entry).read_text()
    payload = {"response": response, "reference": reference, "question": question, "params": resource.params}
    result = run_python(_HARNESS, limits=limits, files={"verifier.py": source, "input.json": json.dumps(payload)})
    if not result.ok:
        err = result.stderr.strip().splitlines()[-1:] or [result.outcome]
        return VerifierResult(name, "error", None, f"verifier script ended with {result.outcome}", error=err[0][:300])
    line = next((ln for ln in reversed(result.stdout.splitlines()) if ln.startswith(_MARK)), None)
    if line is None:
        return VerifierResult(name, "error", None, "verifier script printed no result", error=result.stdout[-200:])
    try:
        out = safejson.loads(line[len(_MARK) :])  # printed by the sandboxed script: untrusted
        verdict, score = out["verdict"], out.get("score")
        return VerifierResult(name, verdict, None if score is None else float(score), str(out.get("reason", ""))[:500])
    except (safejson.UnsafeJSONError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return VerifierResult(name, "error", None, "verifier script returned a malformed result", error=str(exc)[:300])


def as_evidence(resource: Resource, result: VerifierResult) -> Evidence:
    """A verifier result with its resource's decision impact, ready for aggregation."""
    return Evidence(
        source=result.verifier,
        impact=resource.impact,
        score=result.score,
        verdict=result.verdict,
        reason=result.error or result.reason,
        weight=resource.weight,
        cap=resource.cap,
    )
