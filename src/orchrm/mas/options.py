"""What a plan may ask of each sub-agent type: the option kinds (`IntOption`, `RolesOption`) and `CATALOG`,
every type a plan may name with the options it takes, in the order the plan schema lists them.

A leaf of `mas`: plans parse, validate and build their schema against the catalog, and each agent class in
`mas.agents` takes its `option_bounds` from it (by its `type`), so plans never import the agents that build
on them. A new agent type is added here and as a class; a class whose type is not here fails at import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_ROLES = 4


@dataclass(frozen=True)
class IntOption:
    """A count option (`samples`, `rounds`): an integer in `lo..hi`, both inclusive."""

    lo: int
    hi: int

    def schema(self) -> dict[str, Any]:
        return {"type": "integer", "minimum": self.lo, "maximum": self.hi}

    def problem(self, agent_id: str, key: str, value: Any) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool) or not self.lo <= value <= self.hi:
            return f"agent {agent_id!r} option {key}={value!r} must be an integer in {self.lo}..{self.hi}"
        return None


@dataclass(frozen=True)
class RolesOption:
    """Debate roles: 2 to `MAX_ROLES` non-blank strings of at most `max_chars` characters."""

    max_chars: int = 200

    def schema(self) -> dict[str, Any]:
        items = {"type": "string", "maxLength": self.max_chars}
        return {"type": "array", "minItems": 2, "maxItems": MAX_ROLES, "items": items}

    def problem(self, agent_id: str, key: str, value: Any) -> str | None:
        if (
            not isinstance(value, list)
            or not 2 <= len(value) <= MAX_ROLES
            or not all(isinstance(r, str) and r.strip() and len(r) <= self.max_chars for r in value)
        ):
            return f"agent {agent_id!r} roles must be 2-{MAX_ROLES} short strings"
        return None


OptionBound = IntOption | RolesOption

#: Every agent type a plan may name and the options each takes, in this order.
CATALOG: dict[str, dict[str, OptionBound]] = {
    "cot": {},
    "self_consistency": {"samples": IntOption(2, 9)},
    "reflexion": {"rounds": IntOption(1, 5)},
    "debate": {"rounds": IntOption(1, 3), "roles": RolesOption()},
    "search": {"steps": IntOption(1, 5), "top_k": IntOption(1, 5)},
    "python": {"attempts": IntOption(1, 3)},
    "lookup": {},
    "calc": {},
}

#: Tool types: exact functions of their input and upstream answers, with no LLM call. A task offers them by
#: name (`Task.agent_types`); a task that names none is offered the LLM types alone, as before tools existed.
TOOL_TYPES: tuple[str, ...] = ("lookup", "calc")
