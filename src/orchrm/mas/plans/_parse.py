"""Raw orchestrator text to a `Plan`: the JSON object in it, read under safety bounds, shaped by pydantic."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from ... import safejson
from ._model import Plan, PlanError, option_bounds

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
#: The longest plan text read: a valid plan holds at most 8 agents of at most 2,000 characters of input each
#: (~20,000 characters of JSON, six times that if every character is escaped), so a longer text is refused as
#: `json_size` before any parsing, whatever it holds (1 MB of broken objects took up to 0.5 s to scan).
MAX_PLAN_TEXT_CHARS = 200_000
#: Orchestrator replies and plan strings sent to `orchrm serve` are read under these bounds (see safejson).
PLAN_JSON_LIMITS = safejson.Limits(max_chars=MAX_PLAN_TEXT_CHARS, max_depth=32, max_number_chars=100)


def _json_objects(text: str) -> tuple[list[Any], safejson.UnsafeJSONError | None]:
    """Every JSON object in `text` in the order it was written, and the first attempt refused for a rule other
    than syntax (deep nesting, a huge number, a lone surrogate). Linear in the text: the whole text is tried as
    one document at C speed, then one scan of the prose (`safejson.find_objects`, which reads fenced blocks
    where they stand); fenced blocks are tried on their own only when the scan found nothing."""
    refused: safejson.UnsafeJSONError | None = None
    if text.lstrip().startswith("{"):
        try:
            return [safejson.loads(text, PLAN_JSON_LIMITS)], None
        except safejson.UnsafeJSONError as exc:
            refused = exc if exc.rule != "syntax" else None
    scan = safejson.find_objects(text, PLAN_JSON_LIMITS)
    refused = refused or scan.refused
    if scan.objects:
        return scan.objects, refused
    fenced: list[Any] = []
    for block in _FENCE.findall(text):
        try:
            fenced.append(safejson.loads(block, PLAN_JSON_LIMITS))
        except safejson.UnsafeJSONError as exc:
            refused = refused or (exc if exc.rule != "syntax" else None)
    return fenced, refused


def parse_plan(text: str) -> Plan:
    """The plan in raw orchestrator output: JSON, possibly inside prose or a code fence; of several plan
    objects the last one written (a draft and then the final plan: the final).

    Hostile JSON (nested past `PLAN_JSON_LIMITS`, a number of hundreds of digits, a lone surrogate, NaN, a
    text over the size bound) is a `PlanError` with rule `json_<rule>`, never another exception."""
    if not text or not text.strip():
        raise PlanError("parse", "the orchestrator's output is empty")
    try:
        objects, refused = _json_objects(text)
    except safejson.UnsafeJSONError as exc:
        raise PlanError(f"json_{exc.rule}", exc.reason) from None
    candidates = [v for v in objects if isinstance(v, dict) and ("agents" in v or "answer" in v)]
    if not candidates:
        if refused is not None:
            raise PlanError(f"json_{refused.rule}", refused.reason)
        raise PlanError("parse", "no JSON object with 'agents' or 'answer' found in the output")
    value = candidates[-1]
    if "answer" in value and value.get("answer") is not None and not isinstance(value["answer"], str):
        value = {
            **value,
            "answer": json.dumps(value["answer"])
            if isinstance(value["answer"], (list, dict))
            else str(value["answer"]),
        }
    for note in ("dropped_options", "order_edges"):  # the readers' own notes: an orchestrator may not write them
        if note in value:
            raise PlanError("schema", f"{note}: Extra inputs are not permitted")
    try:
        plan = Plan.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        agent = _agent_at(value, err["loc"])
        raise PlanError("schema", f"{where}: {err['msg']}", agent=agent) from None
    return drop_unknown_options(plan)


def drop_unknown_options(plan: Plan) -> Plan:
    """Options a type does not take (a `samples` on a `cot`, copied from an example) are dropped rather than
    voiding the plan, and noted in `plan.dropped_options`; the raw text keeps them. Known options are checked
    by the validator. Constrained decoding never writes an unknown option. Changes `plan` in place."""
    for a in plan.agents:
        allowed = option_bounds(a.type)
        unknown = [k for k in a.options if allowed is not None and k not in allowed]
        if unknown:
            plan.dropped_options.setdefault(a.id, []).extend(unknown)
            a.options = {k: v for k, v in a.options.items() if k not in unknown}
    return plan


def _agent_at(value: dict[str, Any], loc: tuple[Any, ...]) -> str | None:
    if len(loc) >= 2 and loc[0] == "agents" and isinstance(loc[1], int):
        try:
            agent = value["agents"][loc[1]]
            return str(agent.get("id")) if isinstance(agent, dict) and agent.get("id") else None
        except (IndexError, TypeError):
            return None
    return None
