"""The one canonical text of (question, plan) that the reward model reads, in training and in scoring.

Stable whatever the orchestrator's formatting: agents in topological order (ties keep the plan's order),
options with sorted keys, whitespace collapsed. Plans that do not parse are rendered from their raw text,
so the RM can score anything an orchestrator emits.
"""

from __future__ import annotations

import json

from ..mas.completion import read_plan
from ..mas.plans import AgentSpec, Plan, PlanError, topological_order

#: Bumped whenever the rendering changes: a model card records it, and loading checks it.
RENDER_VERSION = 1
_MAX_RAW = 800


def _squash(text: str) -> str:
    return " ".join(text.split())


def render_question(question: str) -> str:
    return f"question: {_squash(question)}"


def render_plan(plan: Plan | str) -> str:
    """Canonical text of a plan (a `Plan`, or raw orchestrator text that may not parse).

    Linear in the plan: an unvalidated plan sent to `orchrm serve` may hold thousands of agents."""
    if isinstance(plan, str):
        try:
            plan = read_plan(plan)  # the one reading of a completion, as the reward contract reads it
        except PlanError:
            return f"plan (unparsed): {_squash(plan)[:_MAX_RAW]}"
    if not plan.agents:
        return f"plan: direct answer: {_squash(plan.answer or '')}"
    by_id: dict[str, AgentSpec] = {}
    for a in plan.agents:
        by_id.setdefault(a.id, a)
    upstream: dict[str, list[str]] = {}
    for e in plan.edges:
        upstream.setdefault(e.dst, []).append(e.src)
    lines = []
    # A plan that never validated may have a cycle: its agents follow in the plan's own order.
    for agent_id in topological_order(plan, cycles="append"):
        agent = by_id[agent_id]
        opts = " ".join(
            f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':'))}" for k, v in sorted(agent.options.items())
        )
        head = f"- {agent.id} [{agent.type}{' ' + opts if opts else ''}]"
        if upstream.get(agent.id):
            head += " <- " + ", ".join(upstream[agent.id])
        lines.append(f"{head}: {_squash(agent.input)}")
    header = f"plan: {len(plan.agents)} agents, final: {','.join(plan.sinks())}"
    return "\n".join([header, *lines])
