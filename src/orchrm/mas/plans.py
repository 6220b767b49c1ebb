"""Plans: the orchestrator's whole multi-agent system for one question, as JSON.

A plan is a set of agents (unique id, type, input text that may reference upstream outputs as `${id}`,
type-specific options) plus edges `{"from": a, "to": b}`. The edges must match the references one to one,
the graph must be a DAG with at least one source and exactly one sink, and no agent may be isolated.
A plan may instead carry only `answer` (the orchestrator answering itself, degree `direct`).

`parse_plan` turns raw model text into a `Plan`; `validate_plan` checks the rules. Both raise `PlanError`
naming the rule broken and the agent involved; in a rollout that error is recorded, never raised further.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import OrchrmError

AGENT_TYPES = ("cot", "self_consistency", "reflexion", "debate", "search")
Degree = Literal["direct", "single", "dag"]
DEGREES: tuple[str, ...] = ("direct", "single", "dag")

MAX_AGENTS = 8
MAX_INPUT_CHARS = 2000
_ID = r"[A-Za-z_][A-Za-z0-9_\-]*"
REFERENCE = re.compile(r"\$\{(" + _ID + r")\}")

#: The options each agent type accepts, with inclusive bounds for integers.
OPTION_BOUNDS: dict[str, dict[str, tuple[int, int] | str]] = {
    "cot": {},
    "self_consistency": {"samples": (2, 9)},
    "reflexion": {"rounds": (1, 5)},
    "debate": {"rounds": (1, 3), "roles": "roles"},
    "search": {"steps": (1, 5), "top_k": (1, 5)},
}
MAX_ROLES = 4


class PlanError(OrchrmError):
    """A plan that cannot be executed. `rule` names the rule broken; `agent` the agent involved, if any."""

    def __init__(self, rule: str, message: str, *, agent: str | None = None) -> None:
        super().__init__(f"invalid plan ({rule}): {message}")
        self.rule = rule
        self.agent = agent
        self.reason = message


class AgentSpec(BaseModel):
    """One sub-agent of a plan."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=40)
    type: str
    input: str
    options: dict[str, Any] = Field(default_factory=dict)

    def references(self) -> list[str]:
        """Upstream agent ids referenced as `${id}` in the input, in order, without repeats."""
        return list(dict.fromkeys(REFERENCE.findall(self.input)))


class Edge(BaseModel):
    """Data flows from `from` to `to`: the output of `from` is substituted into the input of `to`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    src: str = Field(alias="from")
    dst: str = Field(alias="to")


class Plan(BaseModel):
    """A multi-agent system for one question (or, with no agents, the orchestrator's own answer)."""

    model_config = ConfigDict(extra="forbid")

    agents: list[AgentSpec] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)
    answer: str | None = None

    def agent(self, agent_id: str) -> AgentSpec:
        for a in self.agents:
            if a.id == agent_id:
                return a
        raise KeyError(agent_id)

    def upstream(self, agent_id: str) -> list[str]:
        return [e.src for e in self.edges if e.dst == agent_id]

    def sink(self) -> str:
        """The one agent with no outgoing edge (call on a validated plan)."""
        has_out = {e.src for e in self.edges}
        return next(a.id for a in self.agents if a.id not in has_out)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_none=True)


def plan_json_schema(agent_types: tuple[str, ...] = AGENT_TYPES, degree: str = "dag") -> dict[str, Any]:
    """A JSON schema for constrained decoding of a plan (the graph rules are the validator's job)."""
    if degree == "direct":
        return {
            "type": "object",
            "properties": {"answer": {"type": "string", "maxLength": 200}},
            "required": ["answer"],
            "additionalProperties": False,
        }
    agent = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^" + _ID + "$", "maxLength": 40},
            "type": {"type": "string", "enum": list(agent_types)},
            "input": {"type": "string", "maxLength": MAX_INPUT_CHARS},
            "options": {"type": "object"},
        },
        "required": ["id", "type", "input"],
        "additionalProperties": False,
    }
    edge = {
        "type": "object",
        "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
        "required": ["from", "to"],
        "additionalProperties": False,
    }
    max_agents = 1 if degree == "single" else MAX_AGENTS
    return {
        "type": "object",
        "properties": {
            "agents": {"type": "array", "items": agent, "minItems": 1, "maxItems": max_agents},
            "edges": {"type": "array", "items": edge, "maxItems": 2 * MAX_AGENTS},
        },
        "required": ["agents", "edges"],
        "additionalProperties": False,
    }


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def _json_objects(text: str) -> list[Any]:
    """Every JSON object that decodes from some `{` in `text`, fenced blocks first."""
    found: list[Any] = []
    for block in _FENCE.findall(text):
        try:
            found.append(json.loads(block))
        except json.JSONDecodeError:
            pass
    decoder = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        found.append(value)
        i = text.find("{", end)
    return found


def parse_plan(text: str) -> Plan:
    """The plan in raw orchestrator output: JSON, possibly inside prose or a code fence."""
    if not text or not text.strip():
        raise PlanError("parse", "the orchestrator's output is empty")
    candidates = [v for v in _json_objects(text) if isinstance(v, dict) and ("agents" in v or "answer" in v)]
    if not candidates:
        raise PlanError("parse", "no JSON object with 'agents' or 'answer' found in the output")
    value = candidates[0]
    if "answer" in value and value.get("answer") is not None and not isinstance(value["answer"], str):
        value = {**value, "answer": json.dumps(value["answer"]) if isinstance(value["answer"], (list, dict)) else str(value["answer"])}
    try:
        plan = Plan.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        agent = _agent_at(value, err["loc"])
        raise PlanError("schema", f"{where}: {err['msg']}", agent=agent) from None
    return _drop_unknown_options(plan)


def _drop_unknown_options(plan: Plan) -> Plan:
    """Options a type does not take (a `samples` on a `cot`, copied from an example) are dropped at parse
    time rather than voiding the plan; the raw text keeps them. Known options are checked by the validator."""
    for a in plan.agents:
        allowed = OPTION_BOUNDS.get(a.type)
        if allowed is not None:
            a.options = {k: v for k, v in a.options.items() if k in allowed}
    return plan


def _agent_at(value: dict[str, Any], loc: tuple[Any, ...]) -> str | None:
    if len(loc) >= 2 and loc[0] == "agents" and isinstance(loc[1], int):
        try:
            agent = value["agents"][loc[1]]
            return str(agent.get("id")) if isinstance(agent, dict) and agent.get("id") else None
        except (IndexError, TypeError):
            return None
    return None


def validate_plan(
    plan: Plan,
    *,
    degree: str = "dag",
    agent_types: tuple[str, ...] = AGENT_TYPES,
    max_agents: int = MAX_AGENTS,
    max_input_chars: int = MAX_INPUT_CHARS,
) -> Plan:
    """Check every rule; return the plan unchanged or raise the first `PlanError` found."""
    if degree not in DEGREES:
        raise OrchrmError(f"unknown degree {degree!r}; use one of {', '.join(DEGREES)}")
    if not plan.agents:
        if plan.answer is not None and degree == "direct":
            if not plan.answer.strip():
                raise PlanError("empty_answer", "the direct answer is empty")
            return plan
        raise PlanError("no_agents", "the plan has no agents")
    if degree == "direct":
        raise PlanError("degree", "degree 'direct' expects the orchestrator's own answer, not agents")
    if plan.answer is not None:
        raise PlanError("degree", "a plan has either agents or a direct answer, not both")
    if degree == "single" and len(plan.agents) != 1:
        raise PlanError("degree", f"degree 'single' allows exactly one agent, got {len(plan.agents)}")
    if len(plan.agents) > max_agents:
        raise PlanError("too_many_agents", f"{len(plan.agents)} agents, at most {max_agents} allowed")
    ids: set[str] = set()
    for a in plan.agents:
        if not re.fullmatch(_ID, a.id):
            raise PlanError("bad_id", f"agent id {a.id!r} must be letters, digits, '_' or '-'", agent=a.id)
        if a.id in ids:
            raise PlanError("duplicate_id", f"agent id {a.id!r} is used twice", agent=a.id)
        ids.add(a.id)
        if a.type not in agent_types:
            raise PlanError(
                "unknown_type", f"agent {a.id!r} has type {a.type!r}; known: {', '.join(agent_types)}", agent=a.id
            )
        if not a.input.strip():
            raise PlanError("empty_input", f"agent {a.id!r} has an empty input", agent=a.id)
        if len(a.input) > max_input_chars:
            raise PlanError(
                "input_too_long", f"agent {a.id!r} input has {len(a.input)} chars, at most {max_input_chars}", agent=a.id
            )
        _check_options(a)
    for a in plan.agents:
        for ref in a.references():
            if ref == a.id:
                raise PlanError("self_reference", f"agent {a.id!r} references its own output", agent=a.id)
            if ref not in ids:
                raise PlanError("unknown_reference", f"agent {a.id!r} references unknown agent ${{{ref}}}", agent=a.id)
    seen_edges: set[tuple[str, str]] = set()
    for e in plan.edges:
        for end in (e.src, e.dst):
            if end not in ids:
                raise PlanError("unknown_edge_end", f"edge {e.src}->{e.dst} names unknown agent {end!r}", agent=end)
        if e.src == e.dst:
            raise PlanError("self_reference", f"edge {e.src}->{e.dst} loops on itself", agent=e.src)
        if (e.src, e.dst) in seen_edges:
            raise PlanError("duplicate_edge", f"edge {e.src}->{e.dst} appears twice", agent=e.dst)
        seen_edges.add((e.src, e.dst))
    referenced = {(ref, a.id) for a in plan.agents for ref in a.references()}
    for src, dst in sorted(seen_edges - referenced):
        raise PlanError("edge_mismatch", f"edge {src}->{dst} has no ${{{src}}} in {dst!r}'s input", agent=dst)
    for src, dst in sorted(referenced - seen_edges):
        raise PlanError("edge_mismatch", f"{dst!r} references ${{{src}}} but there is no edge {src}->{dst}", agent=dst)
    order = topological_order(plan)  # raises on a cycle
    has_in = {e.dst for e in plan.edges}
    has_out = {e.src for e in plan.edges}
    if len(plan.agents) > 1:
        for a in plan.agents:
            if a.id not in has_in and a.id not in has_out:
                raise PlanError("isolated", f"agent {a.id!r} is connected to no other agent", agent=a.id)
    # At least one source: implied by acyclicity (a graph where every agent has an input edge has a cycle).
    sinks = [a for a in order if a not in has_out]
    if len(sinks) != 1:
        raise PlanError(
            "sink_count", f"exactly one final agent is needed, found {len(sinks)}: {', '.join(sinks)}", agent=sinks[-1] if sinks else None
        )
    return plan


def topological_order(plan: Plan) -> list[str]:
    """Agent ids in an order where every agent follows its upstream ones (Kahn); `PlanError` on a cycle."""
    indeg = {a.id: 0 for a in plan.agents}
    for e in plan.edges:
        indeg[e.dst] += 1
    ready = [a.id for a in plan.agents if indeg[a.id] == 0]
    order: list[str] = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for e in plan.edges:
            if e.src == node:
                indeg[e.dst] -= 1
                if indeg[e.dst] == 0:
                    ready.append(e.dst)
    if len(order) != len(plan.agents):
        stuck = next(a for a in indeg if a not in order)
        raise PlanError("cycle", f"the agents {', '.join(a for a in indeg if a not in order)} form a cycle", agent=stuck)
    return order


def _check_options(a: AgentSpec) -> None:
    allowed = OPTION_BOUNDS[a.type]
    for key, value in a.options.items():
        if key not in allowed:
            raise PlanError("options", f"agent {a.id!r} ({a.type}) has unknown option {key!r}", agent=a.id)
        bound = allowed[key]
        if bound == "roles":
            if (
                not isinstance(value, list)
                or not 2 <= len(value) <= MAX_ROLES
                or not all(isinstance(r, str) and r.strip() and len(r) <= 200 for r in value)
            ):
                raise PlanError("options", f"agent {a.id!r} roles must be 2-{MAX_ROLES} short strings", agent=a.id)
            continue
        lo, hi = bound  # type: ignore[misc]
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise PlanError("options", f"agent {a.id!r} option {key}={value!r} must be an integer in {lo}..{hi}", agent=a.id)


def parse_and_validate(text: str, **kwargs: Any) -> Plan:
    return validate_plan(parse_plan(text), **kwargs)
