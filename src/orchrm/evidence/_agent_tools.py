"""The evaluator agent's tools: one table of (name, the arguments it takes now, what it does).

A tool is offered only when it can do something in the run's current state (no `view_resource` before a
skill is loaded), so the action schema built from this table is what enforces progressive disclosure.
`final_answer` is not a tool: it ends the loop (see `agent.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..llm import Completion, TokenCount
from ..sandbox import arun_python
from ._usage import count_completions
from .aggregate import Evidence
from .execute import as_evidence, run_resource
from .skills import Resource, Skill

if TYPE_CHECKING:
    from ._agent_protocols import Protocol
    from .agent import AgentConfig, JudgeTask, Step


@dataclass
class AgentRun:
    """The state of one agent run: what is loaded and used, the evidence so far, every flag, the tokens."""

    task: JudgeTask
    skills: dict[str, Skill]
    config: AgentConfig
    protocol: Protocol
    evidence: dict[str, list[Evidence]]
    loaded: dict[str, Skill] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    flags: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    final: dict[str, Any] | None = None
    stopped: bool = False
    tokens: TokenCount = field(default_factory=TokenCount)

    def count(self, completions: list[Completion]) -> None:
        count_completions(self.tokens, completions)

    def visible(self, skills: list[Skill]) -> Iterator[tuple[Skill, Resource]]:
        """The resources of `skills` the agent may see for this task."""
        for skill in skills:
            for r in skill.resources:
                if r.visibility == "agent" and r.applies(self.task.tags):
                    yield skill, r

    def resource_list(self, skills: list[Skill]) -> str:
        return "\n".join(
            f"- {s.name}/{r.id} [{r.type}, impact {r.impact}, cost {r.cost}]: {r.description}"
            for s, r in self.visible(skills)
        )


Params = Callable[[AgentRun], "dict[str, Any] | None"]


@dataclass(frozen=True)
class Tool:
    """`params`: the JSON-schema properties the tool takes in this state, None when it is not offered."""

    name: str
    params: Params
    run: Callable[[AgentRun, dict[str, Any]], Awaitable[str]]


async def _use_skill(run: AgentRun, args: dict[str, Any]) -> str:
    skill = run.skills.get(args.get("skill", ""))
    if skill is None:
        run.flags.append(f"unknown_skill: {args.get('skill')!r}")
        return f"No skill named {args.get('skill')!r}. Skills: {', '.join(run.skills)}"
    run.loaded[skill.name] = skill
    return f"{skill.body.strip()}\n\nResources:\n{run.resource_list([skill])}"


async def _list_resources(run: AgentRun, args: dict[str, Any]) -> str:
    return run.resource_list(list(run.loaded.values())) or "No skill loaded yet: use_skill first."


def _use_resource(run: AgentRun, args: dict[str, Any]) -> tuple[Skill, Resource] | str:
    """The loaded resource `args` names, marked used; or the observation that says it does not exist."""
    skill_name, _, res_id = str(args.get("resource", "")).partition("/")
    skill = run.loaded.get(skill_name)
    res = next((r for r in skill.resources if r.id == res_id and r.visibility == "agent"), None) if skill else None
    if skill is not None and res is not None:
        run.used.add(f"{skill.name}/{res.id}")
        return skill, res
    run.flags.append(f"unknown_resource: {args.get('resource')!r}")
    return f"No resource {args.get('resource')!r} in the loaded skills."


async def _view_resource(run: AgentRun, args: dict[str, Any]) -> str:
    found = _use_resource(run, args)
    return found if isinstance(found, str) else found[0].read(found[1])


async def _run_verifier(run: AgentRun, args: dict[str, Any]) -> str:
    found = _use_resource(run, args)
    if isinstance(found, str):
        return found
    skill, res = found
    if not res.runnable:
        return f"{res.id} is a {res.type}; use view_resource to read it."
    task, target = run.task, args.get("target", "both")
    labels = task.labels if target in ("both", "response") or target not in task.labels else [target]
    lines = []
    for label in labels:
        response = task.responses[task.labels.index(label)]
        result = await asyncio.to_thread(
            run_resource,
            skill,
            res,
            response,
            reference=task.reference,
            question=task.question,
            entry=task.entry,
            limits=run.config.sandbox,
        )
        run.evidence.setdefault(label, []).append(as_evidence(res, result))
        lines.append(f"{label}: {result.verdict} (score {result.score}) - {result.error or result.reason}")
    return "\n".join(lines)


async def _run_python(run: AgentRun, args: dict[str, Any]) -> str:
    result = await arun_python(str(args.get("code", "")), limits=run.config.sandbox)
    return result.summary()


def _view_params(run: AgentRun) -> dict[str, Any] | None:
    ids = [f"{s.name}/{r.id}" for s, r in run.visible(list(run.loaded.values()))]
    return {"resource": {"enum": ids}} if ids else None


def _verifier_params(run: AgentRun) -> dict[str, Any] | None:
    runnable = [f"{s.name}/{r.id}" for s, r in run.visible(list(run.loaded.values())) if r.runnable]
    if not runnable:
        return None
    target = {} if run.task.mode == "pointwise" else {"target": {"enum": ["A", "B", "both"]}}
    return {"resource": {"enum": runnable}, **target}


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("use_skill", lambda run: {"skill": {"enum": list(run.skills)}}, _use_skill),
        Tool("list_resources", lambda run: {} if run.loaded else None, _list_resources),
        Tool("view_resource", _view_params, _view_resource),
        Tool("run_verifier", _verifier_params, _run_verifier),
        Tool("run_python", lambda run: {"code": {"type": "string", "maxLength": 1500}}, _run_python),
    )
}
ACTIONS = (*TOOLS, "final_answer")


async def act(run: AgentRun, name: Any, args: dict[str, Any]) -> str:
    """Run the tool `name` and return its observation; an unknown name is flagged and told."""
    tool = TOOLS.get(name)
    if tool is None:
        run.flags.append(f"unknown_action: {name!r}")
        return f"Unknown action {name!r}. Actions: {', '.join(ACTIONS)}"
    return await tool.run(run, args)


def action_schema(run: AgentRun, final: dict[str, Any], *, final_only: bool) -> dict[str, Any]:
    """The JSON schema of the actions open now: the tools on offer, then `final` (alone at the step limit)."""
    if final_only:
        return final
    offered = [(t.name, t.params(run)) for t in TOOLS.values()]
    return {"anyOf": [*(action_object(name, p) for name, p in offered if p is not None), final]}


def action_object(action: str, props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"action": {"const": action}, **props},
        "required": ["action", *props],
        "additionalProperties": False,
    }
