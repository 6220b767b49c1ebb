"""How the evaluator agent asks its model for the next action: two adapters around the one loop.

- `JSON_ACTIONS`: the reply is a JSON object decoded under the action schema (llama.cpp's server enforces
  it; the `LLM` wrapper checks it client-side and raises `SchemaViolation` otherwise).
- `TOOL_CALLS`: native tool calling, each tool one branch of the same schema; the first tool call is the
  action, checked against that schema here. A server that rejects tools or answers in text moves the run
  to JSON actions, flagged.

`next_action` returns (action, the text to put back as the assistant's turn), or None when the step gave
no action and the loop goes on; errors of the model call propagate to the loop's error policy.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from typing import Protocol as _Protocol

import jsonschema

from .. import safejson
from ..errors import BackendHTTPError
from ..llm import LLM, Completion, Message

if TYPE_CHECKING:
    from ._agent_tools import AgentRun

Action = tuple[dict[str, Any], str]
_NO_TOOLS_STATUS = (400, 404, 422, 501)


class Protocol(_Protocol):
    name: str

    async def next_action(
        self, llm: LLM, messages: list[Message], schema: dict[str, Any], run: AgentRun
    ) -> Action | None: ...


def invalid_action(run: AgentRun, messages: list[Message], text: str, problem: str, ask: str) -> None:
    """Flag an invalid action and tell the model, so it can try again."""
    run.flags.append(f"invalid_action: {problem[:120]}")
    messages += [
        Message(role="assistant", content=text[:800] or "(empty)"),
        Message(role="user", content=f"That was not a valid action ({problem[:200]}). {ask}"),
    ]


async def _ask(llm: LLM, messages: list[Message], run: AgentRun, **how: Any) -> list[Completion]:
    """The model's next reply at the run's category, token limit and temperature, counted in the run's tokens;
    `how` is what differs between the protocols (a JSON schema, or the tools)."""
    cfg = run.config
    completions = await llm.agenerate(
        messages, category=cfg.category, max_tokens=cfg.max_tokens, temperature=cfg.temperature, **how
    )
    run.count(completions)
    return completions


class JsonActions:
    name = "json"

    async def next_action(
        self, llm: LLM, messages: list[Message], schema: dict[str, Any], run: AgentRun
    ) -> Action | None:
        completions = await _ask(llm, messages, run, json_schema=schema)
        return completions[0].json_value(), completions[0].text


class ToolCalls:
    name = "tools"

    async def next_action(
        self, llm: LLM, messages: list[Message], schema: dict[str, Any], run: AgentRun
    ) -> Action | None:
        try:
            completions = await _ask(llm, messages, run, tools=_tools(schema), tool_choice="required")
        except BackendHTTPError as exc:
            if exc.status not in _NO_TOOLS_STATUS:
                raise
            run.flags.append(f"tools_unsupported: fell back to JSON actions ({exc.message[:80]})")
            run.protocol = JSON_ACTIONS
            return None
        c = completions[0]
        if not c.tool_calls:
            run.flags.append("no_tool_call: the server answered in text; switched to JSON actions")
            run.protocol = JSON_ACTIONS
            try:
                action = safejson.loads(c.text)
            except safejson.UnsafeJSONError:
                return None
        else:
            action = {"action": c.tool_calls[0].name, **c.tool_calls[0].arguments}
        problem = _schema_problem(action, schema)
        if problem is not None:
            invalid_action(run, messages, json.dumps(action), problem, "Call one of the tools.")
            return None
        return action, json.dumps(action)


JSON_ACTIONS = JsonActions()
TOOL_CALLS = ToolCalls()
PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (JSON_ACTIONS, TOOL_CALLS)}


def _tools(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The action schema's branches as OpenAI function tools (the `action` const becomes the name)."""
    out = []
    for branch in schema.get("anyOf", [schema]):
        props = {k: v for k, v in branch["properties"].items() if k != "action"}
        params = {
            "type": "object",
            "properties": props,
            "required": [k for k in branch["required"] if k != "action"],
            "additionalProperties": False,
        }
        out.append(
            {"type": "function", "function": {"name": branch["properties"]["action"]["const"], "parameters": params}}
        )
    return out


def _schema_problem(value: Any, schema: dict[str, Any]) -> str | None:
    err = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    return None if err is None else err.message
