"""Tool agents with exact outcomes and no LLM call: what the plan says decides what they answer.

- `lookup`: `ATTRIBUTE of ENTITY` ("founding year of Varnex Labs", "population of ${a1}") read from the task's
  records (`tasks.Records`). The attribute and the entity must be named exactly (case and spacing aside); an
  unknown one is a failure naming it, never a near match that would rescue a wrong plan.
- `calc`: one expression over numbers and upstream answers (`${a2} - ${a1}`, `'A' if ${a1} < ${a2} else 'B'`),
  evaluated by `arithmetic.evaluate`, never `eval`.

Both record one step (what was asked, what came back) and no LLM calls, so their traces carry 0 tokens.
"""

from __future__ import annotations

import re

from ...errors import OrchrmError
from ...tasks.base import Records, UnknownFact
from .arithmetic import CalcError, evaluate, formatted
from .base import Agent, AgentResult, AgentRun

_LOOKUP = re.compile(r"^\s*(?P<attribute>.+?)\s+of\s+(?P<entity>.+?)\s*$", re.DOTALL)
_QUOTES = "\"'`"


class NoRecords(OrchrmError):
    """A lookup agent ran on a task that has no structured records."""


class BadLookup(OrchrmError):
    """A lookup input that is not `ATTRIBUTE of ENTITY`."""


def parse_lookup(text: str) -> tuple[str, str]:
    """(attribute, entity) of a lookup input; `BadLookup` when it is not `ATTRIBUTE of ENTITY`. The first `of`
    splits, so an entity may not contain one (no world name does)."""
    m = _LOOKUP.match(text.strip().rstrip(".?").strip())
    if m is None:
        raise BadLookup(f"lookup input {text.strip()[:80]!r} is not 'ATTRIBUTE of ENTITY'")
    return " ".join(m["attribute"].split()).lower(), " ".join(m["entity"].strip(_QUOTES).split())


class Lookup(Agent):
    type = "lookup"

    async def run(self, run: AgentRun) -> AgentResult:
        records = run.retriever
        if not isinstance(records, Records):
            raise NoRecords("the lookup tool needs a task with records (world_qa:tools=exact), and this one has none")
        attribute, entity = parse_lookup(run.task_input)
        try:
            value = records.fact(entity, attribute)
        except UnknownFact as exc:
            run.steps.append({"attribute": attribute, "entity": entity, "error": str(exc)})
            raise
        run.steps.append({"attribute": attribute, "entity": entity, "value": value})
        return AgentResult(output=f"{attribute} of {entity}: {value}", answer=value)


class Calc(Agent):
    type = "calc"

    async def run(self, run: AgentRun) -> AgentResult:
        try:
            value = formatted(evaluate(run.task_input))
        except CalcError as exc:
            run.steps.append({"expression": run.task_input[:500], "error": str(exc)})
            raise
        run.steps.append({"expression": run.task_input[:500], "value": value})
        return AgentResult(output=f"{run.task_input.strip()} = {value}", answer=value)
