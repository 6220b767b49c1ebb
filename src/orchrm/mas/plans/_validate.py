"""The rules a plan must keep to run: each broken rule is a `PlanError` naming it and the agent involved."""

from __future__ import annotations

import re
from typing import Any

from ...errors import OrchrmError
from ._model import (
    AGENT_TYPES,
    DEGREES,
    ID,
    MAX_AGENTS,
    MAX_INPUT_CHARS,
    AgentSpec,
    Edge,
    Plan,
    PlanError,
    option_bounds,
    topological_order,
)
from ._parse import drop_unknown_options, parse_plan


def validate_plan(
    plan: Plan,
    *,
    degree: str = "dag",
    agent_types: tuple[str, ...] | None = None,
    max_agents: int = MAX_AGENTS,
    max_input_chars: int = MAX_INPUT_CHARS,
) -> Plan:
    """Check every rule and return the plan with its edges completed from the references (a copy), or raise
    the first `PlanError` found. `agent_types` defaults to every type; options a type does not take are
    dropped and noted, as `parse_plan` does."""
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
    plan = drop_unknown_options(plan.model_copy(deep=True))
    types = AGENT_TYPES if agent_types is None else agent_types
    ids = {a.id for a in plan.agents}
    seen: set[str] = set()
    for a in plan.agents:
        _check_agent(a, seen, types, max_input_chars)
    for a in plan.agents:
        _check_references(a, ids)
    _check_edges(plan, ids)
    plan = plan.model_copy(update={"edges": _edges_kept(plan)})
    _check_graph(plan)
    return plan


def _edges_kept(plan: Plan) -> list[Edge]:
    """The implied edges, then the order-only ones (an imported MAS-Orchestra edge that carries no data)."""
    implied = plan.implied_edges()
    have = {(e.src, e.dst) for e in implied}
    return implied + [e for e in plan.order_edges if (e.src, e.dst) not in have]


def _check_agent(a: AgentSpec, seen: set[str], types: tuple[str, ...], max_input_chars: int) -> None:
    if not re.fullmatch(ID, a.id):
        raise PlanError("bad_id", f"agent id {a.id!r} must be letters, digits, '_' or '-'", agent=a.id)
    if a.id in seen:
        raise PlanError("duplicate_id", f"agent id {a.id!r} is used twice", agent=a.id)
    seen.add(a.id)
    if a.type not in types:
        raise PlanError("unknown_type", f"agent {a.id!r} has type {a.type!r}; known: {', '.join(types)}", agent=a.id)
    if not a.input.strip():
        raise PlanError("empty_input", f"agent {a.id!r} has an empty input", agent=a.id)
    if len(a.input) > max_input_chars:
        raise PlanError(
            "input_too_long", f"agent {a.id!r} input has {len(a.input)} chars, at most {max_input_chars}", agent=a.id
        )
    bounds = option_bounds(a.type) or {}
    for key, value in a.options.items():
        problem = bounds[key].problem(a.id, key, value)
        if problem is not None:
            raise PlanError("options", problem, agent=a.id)


def _check_references(a: AgentSpec, ids: set[str]) -> None:
    for bad in a.malformed_references():
        raise PlanError(
            "bad_reference",
            f"agent {a.id!r} writes ${{{bad}}}, which is not an agent id (letters, digits, '_', '-')",
            agent=a.id,
        )
    for ref in a.references():
        if ref == a.id:
            raise PlanError("self_reference", f"agent {a.id!r} references its own output", agent=a.id)
        if ref not in ids:
            raise PlanError("unknown_reference", f"agent {a.id!r} references unknown agent ${{{ref}}}", agent=a.id)


def _check_edges(plan: Plan, ids: set[str]) -> None:
    seen_edges: set[tuple[str, str]] = set()
    for e in [*plan.edges, *(o for o in plan.order_edges if o not in plan.edges)]:
        for end in (e.src, e.dst):
            if end not in ids:
                raise PlanError("unknown_edge_end", f"edge {e.src}->{e.dst} names unknown agent {end!r}", agent=end)
        if e.src == e.dst:
            raise PlanError("self_reference", f"edge {e.src}->{e.dst} loops on itself", agent=e.src)
        if (e.src, e.dst) in seen_edges:
            raise PlanError("duplicate_edge", f"edge {e.src}->{e.dst} appears twice", agent=e.dst)
        seen_edges.add((e.src, e.dst))
    # An explicit edge must carry data, unless the MAS-Orchestra reader marked it order-only; a reference
    # without an explicit edge is implied by it.
    referenced = {(ref, a.id) for a in plan.agents for ref in a.references()}
    referenced |= {(e.src, e.dst) for e in plan.order_edges}
    for src, dst in sorted(seen_edges - referenced):
        raise PlanError("edge_mismatch", f"edge {src}->{dst} has no ${{{src}}} in {dst!r}'s input", agent=dst)


def _check_graph(plan: Plan) -> None:
    """Acyclic, nothing isolated, one sink (on a plan whose edges are the implied ones)."""
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
            "sink_count",
            f"exactly one final agent is needed, found {len(sinks)}: {', '.join(sinks)}",
            agent=sinks[-1] if sinks else None,
        )


def parse_and_validate(text: str, **kwargs: Any) -> Plan:
    return validate_plan(parse_plan(text), **kwargs)
