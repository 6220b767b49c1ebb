"""The JSON schema for constrained decoding: a grammar under which most plan rules hold by construction."""

from __future__ import annotations

import itertools
from typing import Any

from ._model import AGENT_TYPES, option_bounds

#: Constrained plans have at most this many agents (the prompt asks for 1 to 4; the grammar grows with it).
SCHEMA_MAX_AGENTS = 4


def _options_schema(agent_type: str) -> dict[str, Any]:
    bounds = option_bounds(agent_type)
    if bounds is None:
        raise KeyError(agent_type)
    props = {key: bound.schema() for key, bound in bounds.items()}
    return {"type": "object", "properties": props, "additionalProperties": False}


# Inside a JSON string: any character but `$`, `"` and `\\`; a `$` not opening a reference; an escape.
_PLAIN = r'([^$\\"]|[$][^{\\"]|\\.)'


def schema_agent_id(position: int) -> str:
    """The id constrained decoding gives the agent at `position` (0-based): a1, a2, ..."""
    return f"a{position + 1}"


def _ref(position: int) -> str:
    return f"[$][{{]{schema_agent_id(position)}[}}]"


def _input_pattern(position: int, required: tuple[int, ...] = ()) -> str:
    """Text that references only agents before `position` (no unknown, self or cyclic reference) and every
    agent in `required` at least once (in any order)."""
    earlier = "|".join(schema_agent_id(i) for i in range(position))
    text = f"({_PLAIN}|[$][{{]({earlier})[}}])*" if earlier else f"{_PLAIN}*"
    if not required:
        return f"^{text}$"
    orders = ["".join(_ref(i) + text for i in order) for order in itertools.permutations(required)]
    return f"^{text}({'|'.join(orders)})$"


def _consumers(n: int) -> list[tuple[tuple[int, ...], ...]]:
    """Every way to give each agent but the last one later agent that uses it, as the required references
    of each position: with them no agent is isolated and the last is the only sink."""
    out = []
    for choice in itertools.product(*(range(j + 1, n) for j in range(n - 1))):
        out.append(tuple(tuple(j for j, k in enumerate(choice) if k == pos) for pos in range(n)))
    return out


def plan_json_schema(agent_types: tuple[str, ...] | None = None, degree: str = "dag") -> dict[str, Any]:
    """A JSON schema for constrained decoding that makes most graph rules hold by construction.

    Agent k (from 0) has the id `a{k+1}` and one schema branch per type, so ids are unique and types and
    options well-formed; its input may reference only `${a1}`..`${ak}`, so there is no unknown reference, no
    self-reference and no cycle; and every agent but the last is referenced by a later one, so none is
    isolated and the last is the one sink. It has no `edges`: the references imply them. What is left to the
    validator is what a grammar does not bound (an output cut off at the token limit). `agent_types`
    defaults to every type."""
    agent_types = AGENT_TYPES if agent_types is None else agent_types
    if degree == "direct":
        return {
            "type": "object",
            "properties": {"answer": {"type": "string", "maxLength": 200}},
            "required": ["answer"],
            "additionalProperties": False,
        }

    def agent(position: int, required: tuple[int, ...]) -> dict[str, Any]:
        return {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "id": {"const": schema_agent_id(position)},
                        "type": {"const": t},
                        "input": {"type": "string", "pattern": _input_pattern(position, required)},
                        "options": _options_schema(t),
                    },
                    "required": ["id", "type", "input"],
                    "additionalProperties": False,
                }
                for t in agent_types
            ]
        }

    # One branch per plan length and choice of consumers (1, 1, 2, 6 for 1-4 agents): llama.cpp's grammar
    # needs prefixItems to list every position it allows.
    lengths = [1] if degree == "single" else range(1, SCHEMA_MAX_AGENTS + 1)
    arrays = [
        {"type": "array", "prefixItems": [agent(i, req[i]) for i in range(n)], "minItems": n, "maxItems": n}
        for n in lengths
        for req in _consumers(n)
    ]
    return {
        "type": "object",
        "properties": {"agents": arrays[0] if len(arrays) == 1 else {"anyOf": arrays}},
        "required": ["agents"],
        "additionalProperties": False,
    }
