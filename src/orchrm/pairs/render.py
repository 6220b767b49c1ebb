"""The one canonical text of (question, plan) that the reward model reads, in training and in scoring.

Stable whatever the orchestrator's formatting: agents in topological order (ties keep the plan's order),
options with sorted keys, whitespace collapsed. Plans that do not parse are rendered from their raw text,
so the RM can score anything an orchestrator emits.
"""

from __future__ import annotations

import json
from collections import deque

from ..mas.plans import Plan, PlanError, parse_plan

#: Bumped whenever the rendering changes: a model card records it, and loading checks it.
RENDER_VERSION = 1
_MAX_RAW = 800


def _squash(text: str) -> str:
    return " ".join(text.split())


def render_question(question: str) -> str:
    return f"question: {_squash(question)}"


def _topological(plan: Plan) -> list[str]:
    ids = [a.id for a in plan.agents]
    indegree = {i: 0 for i in ids}
    children: dict[str, list[str]] = {i: [] for i in ids}
    for e in plan.edges:
        if e.src in indegree and e.dst in indegree:
            indegree[e.dst] += 1
            children[e.src].append(e.dst)
    ready = deque(i for i in ids if indegree[i] == 0)
    order: list[str] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for child in sorted(children[node], key=ids.index):
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    # A cycle leaves agents unplaced; they follow in the plan's own order.
    return order + [i for i in ids if i not in order]


def render_plan(plan: Plan | str) -> str:
    """Canonical text of a plan (a `Plan`, or raw orchestrator text that may not parse)."""
    if isinstance(plan, str):
        try:
            plan = parse_plan(plan)
        except PlanError:
            return f"plan (unparsed): {_squash(plan)[:_MAX_RAW]}"
    if not plan.agents:
        return f"plan: direct answer: {_squash(plan.answer or '')}"
    lines = []
    for agent_id in _topological(plan):
        agent = plan.agent(agent_id)
        opts = " ".join(f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':'))}" for k, v in sorted(agent.options.items()))
        head = f"- {agent.id} [{agent.type}{' ' + opts if opts else ''}]"
        upstream = plan.upstream(agent.id)
        if upstream:
            head += " <- " + ", ".join(upstream)
        lines.append(f"{head}: {_squash(agent.input)}")
    sinks = [a.id for a in plan.agents if a.id not in {e.src for e in plan.edges}]
    header = f"plan: {len(plan.agents)} agents, final: {','.join(sinks)}"
    return "\n".join([header, *lines])
