"""The one canonical text of (question, plan) that the reward model reads, in training and in scoring.

Stable whatever the orchestrator's formatting: agents in topological order (ties keep the plan's order),
options with sorted keys, whitespace collapsed. Plans that do not parse are rendered from their raw text,
so the RM can score anything an orchestrator emits.

Rendering v2 (`PairConfig(render_version=2)`, `orchrm pairs --render-version 2`) writes each `${id}` in an
agent's input as `${id=<that agent's input>}`; v1, the default, does not. v2 stays opt-in: on the positive
control it was not distinguished from v1 (FINDINGS.md, "Positive control"). A pairs folder's manifest and an RM's
model card record the version their text is in, and an RM is scored in its own, whatever the default.
"""

from __future__ import annotations

import json
import re

from ..mas.completion import read_plan
from ..mas.plans import REFERENCE, AgentSpec, Plan, PlanError, topological_order

#: The rendering new pairs get unless their `PairConfig` names another; a new rendering gets a new number.
RENDER_VERSION = 1
#: The versions `render_plan` can still write (an RM is scored in the version it was trained on).
RENDER_VERSIONS = (1, 2)
_MAX_RAW = 800
#: How much of a referenced agent's input is quoted where `${id}` stands (one level, never expanded further).
_MAX_INLINE = 80


def _squash(text: str) -> str:
    return " ".join(text.split())


def render_question(question: str) -> str:
    return f"question: {_squash(question)}"


def render_plan(plan: Plan | str, *, version: int = RENDER_VERSION) -> str:
    """Canonical text of a plan (a `Plan`, or raw orchestrator text that may not parse) in rendering `version`.

    Linear in the plan: an unvalidated plan sent to `orchrm serve` may hold thousands of agents (a reference
    quotes at most `_MAX_INLINE` characters, never expanded further)."""
    if version not in RENDER_VERSIONS:
        raise ValueError(f"plan rendering v{version} is not one this orchrm writes ({RENDER_VERSIONS})")
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
        text = _squash(agent.input)
        lines.append(f"{head}: {_inline(text, by_id) if version >= 2 else text}")
    header = f"plan: {len(plan.agents)} agents, final: {','.join(plan.sinks())}"
    return "\n".join([header, *lines])


def _inline(text: str, by_id: dict[str, AgentSpec]) -> str:
    """`${id}` as `${id=<that agent's input>}`: what a reference stands for sits beside the operator or the if/else
    that uses it, so `'A' if ${a1} > ${a2}` with a1 = A's population differs in one line from the same expression
    over a swapped lookup order (in v1 the binding spans lines, which MiniLM did not learn from ~500 pairs)."""

    def sub(m: re.Match[str]) -> str:
        ref = by_id.get(m.group(1))
        if ref is None:
            return m.group(0)
        quoted = _squash(ref.input)
        return f"${{{m.group(1)}={quoted[:_MAX_INLINE]}{'...' if len(quoted) > _MAX_INLINE else ''}}}"

    return REFERENCE.sub(sub, text)
