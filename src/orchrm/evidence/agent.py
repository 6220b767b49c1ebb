"""The evaluator agent: ONE loop with progressive disclosure over reward-evaluation skills.

The agent first sees only the skills' names and descriptions. Its actions: use_skill, list_resources,
view_resource, run_verifier, run_python (sandbox), final_answer. Actions are JSON objects decoded under a
JSON schema that only admits the actions (and skill / resource names) available in the current state, so
a constrained server cannot emit an unknown tool; a server that does not enforce schemas is checked
client-side. Every fallback — an invalid action, an LLM error, forced finalisation at the step limit, no
final answer — is recorded in `AgentOutcome.flags`; none turns into a default score.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jsonschema

from ..errors import BackendHTTPError, LLMError, SchemaViolation
from ..llm import LLM, Completion, Message
from .aggregate import Evidence
from .execute import as_evidence, run_resource
from .sandbox import SandboxLimits, arun_python
from .skills import Resource, Skill

_PROMPTS = Path(__file__).with_name("prompts")
ACTIONS = ("use_skill", "list_resources", "view_resource", "run_verifier", "run_python", "final_answer")


@dataclass
class JudgeTask:
    """What one agent run judges: one response (pointwise) or two shown as A and B (pairwise)."""

    mode: Literal["pointwise", "pairwise"]
    question: str
    responses: list[str]
    kind: str = "any"
    reference: str | None = None
    entry: dict[str, Any] | None = None
    prior_evidence: dict[str, list[Evidence]] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return ["response"] if self.mode == "pointwise" else ["A", "B"]

    @property
    def tags(self) -> set[str]:
        return {self.kind, self.mode}


@dataclass
class Step:
    action: str
    args: dict[str, Any]
    observation: str


@dataclass
class AgentOutcome:
    """What the loop produced. `final` is None when the agent never gave a valid final answer."""

    final: dict[str, Any] | None
    evidence: dict[str, list[Evidence]]
    steps: list[Step]
    flags: list[str]
    used_resources: list[str]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0


@dataclass(frozen=True)
class AgentConfig:
    max_steps: int = 6
    max_tokens: int = 320
    temperature: float = 0.0
    observation_chars: int = 1500
    category: str = "verify"
    sandbox: SandboxLimits = SandboxLimits()
    protocol: Literal["auto", "json", "tools"] = "auto"


class EvaluatorAgent:
    """Runs the loop for one task at a time; stateless between runs, so runs may go concurrently."""

    def __init__(self, llm: LLM, skills: list[Skill], config: AgentConfig | None = None) -> None:
        self.llm = llm
        self.skills = {s.name: s for s in skills}
        self.config = config or AgentConfig()

    async def run(self, task: JudgeTask) -> AgentOutcome:
        cfg = self.config
        state = _State(task=task, evidence={k: list(v) for k, v in task.prior_evidence.items()}, protocol=self._protocol())
        messages = [
            Message(role="system", content=self._system_prompt(task)),
            Message(role="user", content=self._task_prompt(task)),
        ]
        for step in range(cfg.max_steps):
            last = step == cfg.max_steps - 1
            if last:
                state.flags.append("forced_finalization")
                messages.append(Message(role="user", content="Step limit reached: reply with final_answer now."))
            schema = self._schema(task, state, final_only=last)
            try:
                if state.protocol == "tools":
                    got = await self._tool_step(messages, schema, state)
                    if got is None:
                        continue
                    action, text = got
                else:
                    completions = await self.llm.agenerate(
                        messages,
                        category=cfg.category,
                        json_schema=schema,
                        max_tokens=cfg.max_tokens,
                        temperature=cfg.temperature,
                    )
                    state.count(completions)
                    action = completions[0].json_value()
                    text = completions[0].text
            except BackendHTTPError as exc:
                if state.protocol == "tools" and exc.status in (400, 404, 422, 501):
                    state.flags.append(f"tools_unsupported: fell back to JSON actions ({exc.message[:80]})")
                    state.protocol = "json"
                    continue
                state.flags.append(f"llm_error: {exc}")
                break
            except SchemaViolation as exc:
                state.count_violation(exc)
                state.flags.append(f"invalid_action: {exc.message[:120]}")
                messages += [
                    Message(role="assistant", content=exc.text[:800] or "(empty)"),
                    Message(role="user", content=f"That was not a valid action ({exc.message[:200]}). Reply with one JSON action."),
                ]
                continue
            except LLMError as exc:
                state.flags.append(f"llm_error: {exc}")
                break
            name = action.get("action")
            if name == "final_answer":
                state.final = {k: v for k, v in action.items() if k != "action"}
                state.steps.append(Step("final_answer", state.final, ""))
                break
            observation = await self._act(name, action, state)
            state.steps.append(Step(name, {k: v for k, v in action.items() if k != "action"}, observation))
            messages += [
                Message(role="assistant", content=text),
                Message(role="user", content=f"Observation:\n{observation[: cfg.observation_chars]}\n(steps left: {cfg.max_steps - step - 1})"),
            ]
        if state.final is None:
            state.flags.append("no_final_answer")
        return AgentOutcome(
            final=state.final,
            evidence=state.evidence,
            steps=state.steps,
            flags=state.flags,
            used_resources=sorted(state.used),
            prompt_tokens=state.prompt_tokens,
            completion_tokens=state.completion_tokens,
            calls=state.calls,
        )

    def _protocol(self) -> str:
        if self.config.protocol != "auto":
            return self.config.protocol
        # llama.cpp's server (the local backend) is driven by constrained JSON; served models by native tools.
        return "tools" if self.llm.backend.kind == "openai" else "json"

    async def _tool_step(self, messages: list[Message], schema: dict[str, Any], state: _State) -> tuple[dict[str, Any], str] | None:
        """One step through native tool calling: the first tool call is the action, checked against the
        same schema as the JSON protocol. A reply without a tool call switches the run to JSON actions."""
        cfg = self.config
        completions = await self.llm.agenerate(
            messages, category=cfg.category, tools=_tools(schema), tool_choice="required",
            max_tokens=cfg.max_tokens, temperature=cfg.temperature,
        )  # fmt: skip
        state.count(completions)
        c = completions[0]
        if not c.tool_calls:
            state.flags.append("no_tool_call: the server answered in text; switched to JSON actions")
            state.protocol = "json"
            try:
                action = json.loads(c.text)
            except json.JSONDecodeError:
                return None
        else:
            call = c.tool_calls[0]
            action = {"action": call.name, **call.arguments}
        problem = _schema_problem(action, schema)
        if problem is not None:
            state.flags.append(f"invalid_action: {problem[:120]}")
            messages += [
                Message(role="assistant", content=json.dumps(action)[:800]),
                Message(role="user", content=f"That was not a valid action ({problem[:200]}). Call one of the tools."),
            ]
            return None
        return action, json.dumps(action)

    # --- tools -------------------------------------------------------------------------------------

    async def _act(self, name: str, action: dict[str, Any], state: _State) -> str:
        if name == "use_skill":
            skill = self.skills.get(action.get("skill", ""))
            if skill is None:
                state.flags.append(f"unknown_skill: {action.get('skill')!r}")
                return f"No skill named {action.get('skill')!r}. Skills: {', '.join(self.skills)}"
            state.loaded[skill.name] = skill
            return f"{skill.body.strip()}\n\nResources:\n{self._resource_list(state, [skill])}"
        if name == "list_resources":
            return self._resource_list(state, list(state.loaded.values())) or "No skill loaded yet: use_skill first."
        if name in ("view_resource", "run_verifier"):
            found = self._lookup(state, action.get("resource", ""))
            if found is None:
                state.flags.append(f"unknown_resource: {action.get('resource')!r}")
                return f"No resource {action.get('resource')!r} in the loaded skills."
            skill, res = found
            state.used.add(f"{skill.name}/{res.id}")
            if name == "view_resource":
                return skill.read(res)
            return await self._run_verifier(skill, res, action.get("target", "both"), state)
        if name == "run_python":
            result = await arun_python(str(action.get("code", "")), limits=self.config.sandbox)
            return result.summary()
        state.flags.append(f"unknown_action: {name!r}")
        return f"Unknown action {name!r}. Actions: {', '.join(ACTIONS)}"

    async def _run_verifier(self, skill: Skill, res: Resource, target: str, state: _State) -> str:
        if res.type not in ("verifier", "script"):
            return f"{res.id} is a {res.type}; use view_resource to read it."
        task = state.task
        labels = task.labels if target in ("both", "response") or target not in task.labels else [target]
        lines = []
        for label in labels:
            response = task.responses[task.labels.index(label)]
            result = await asyncio.to_thread(
                run_resource, skill, res, response,
                reference=task.reference, question=task.question, entry=task.entry, limits=self.config.sandbox,
            )  # fmt: skip
            state.evidence.setdefault(label, []).append(as_evidence(res, result))
            lines.append(f"{label}: {result.verdict} (score {result.score}) - {result.error or result.reason}")
        return "\n".join(lines)

    # --- prompts and schemas -----------------------------------------------------------------------

    def _system_prompt(self, task: JudgeTask) -> str:
        catalog = "\n".join(f"- {s.name}: {s.description}" for s in self.skills.values())
        if task.mode == "pointwise":
            what, target_hint = "one response to a question", ""
            final = '{"action": "final_answer", "reason": ONE SENTENCE, "score": 0..1, "confidence": 0..1}: your judgment (1 = correct).'
        else:
            what, target_hint = "which of two responses (A, B) to a question is better", ', "target": "A"|"B"|"both"'
            final = '{"action": "final_answer", "reason": ONE SENTENCE, "verdict": "A"|"B"|"tie", "confidence": 0..1}: your judgment.'
        template = (_PROMPTS / "agent_system.txt").read_text()
        return template.format(what=what, target_hint=target_hint, final_hint=final, max_steps=self.config.max_steps, catalog=catalog)

    def _task_prompt(self, task: JudgeTask) -> str:
        if task.mode == "pointwise":
            responses = f"Response:\n{task.responses[0]}\n"
        else:
            responses = f"Response A:\n{task.responses[0]}\n\nResponse B:\n{task.responses[1]}\n"
        lines = [
            f"{label}: {e.source}: {e.verdict} ({e.reason})"
            for label in task.labels
            for e in task.prior_evidence.get(label, [])
            if e.verdict != "abstain"
        ]
        suggested = [s.name for s in self.skills.values() if s.applies({task.kind})] or list(self.skills)
        note = "A reference answer is available to the verifiers.\n" if task.reference is not None else "No reference answer is available.\n"
        return (_PROMPTS / "agent_task.txt").read_text().format(
            question=task.question, responses=responses, reference_note=note,
            evidence="\n".join(lines) or "(none)", suggested=", ".join(suggested),
        )  # fmt: skip

    def _resource_list(self, state: _State, skills: list[Skill]) -> str:
        rows = []
        for skill in skills:
            for r in skill.resources:
                if r.visibility == "agent" and _applies(r, state.task.tags):
                    rows.append(f"- {skill.name}/{r.id} [{r.type}, impact {r.impact}, cost {r.cost}]: {r.description}")
        return "\n".join(rows)

    def _lookup(self, state: _State, rid: str) -> tuple[Skill, Resource] | None:
        skill_name, _, res_id = rid.partition("/")
        skill = state.loaded.get(skill_name)
        if skill is None:
            return None
        for r in skill.resources:
            if r.id == res_id and r.visibility == "agent":
                return skill, r
        return None

    def _schema(self, task: JudgeTask, state: _State, *, final_only: bool) -> dict[str, Any]:
        if task.mode == "pointwise":
            final_props: dict[str, Any] = {"score": {"type": "number", "minimum": 0, "maximum": 1}}
        else:
            final_props = {"verdict": {"enum": ["A", "B", "tie"]}}
        final = _obj("final_answer", {"reason": {"type": "string", "maxLength": 400}, **final_props, "confidence": {"type": "number", "minimum": 0, "maximum": 1}})
        if final_only:
            return final
        branches = [_obj("use_skill", {"skill": {"enum": list(self.skills)}})]
        ids = [f"{s.name}/{r.id}" for s in state.loaded.values() for r in s.resources if r.visibility == "agent" and _applies(r, task.tags)]
        runnable = [
            f"{s.name}/{r.id}"
            for s in state.loaded.values()
            for r in s.resources
            if r.visibility == "agent" and r.type in ("verifier", "script") and _applies(r, task.tags)
        ]
        if state.loaded:
            branches.append(_obj("list_resources", {}))
        if ids:
            branches.append(_obj("view_resource", {"resource": {"enum": ids}}))
        if runnable:
            target = {} if task.mode == "pointwise" else {"target": {"enum": ["A", "B", "both"]}}
            branches.append(_obj("run_verifier", {"resource": {"enum": runnable}, **target}))
        branches += [_obj("run_python", {"code": {"type": "string", "maxLength": 1500}}), final]
        return {"anyOf": branches}


@dataclass
class _State:
    task: JudgeTask
    evidence: dict[str, list[Evidence]]
    loaded: dict[str, Skill] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    flags: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    final: dict[str, Any] | None = None
    protocol: str = "json"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    def count(self, completions: list[Completion]) -> None:
        for c in completions:
            self.prompt_tokens += c.usage.prompt_tokens
            self.completion_tokens += c.usage.completion_tokens
            self.calls += 1

    def count_violation(self, exc: SchemaViolation) -> None:
        usage = getattr(exc, "usage", None)
        self.calls += 1
        if usage is not None:
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens


def _applies(r: Resource, tags: set[str]) -> bool:
    return "any" in r.applies_to or bool(tags & set(r.applies_to))


def _obj(action: str, props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"action": {"const": action}, **props},
        "required": ["action", *props],
        "additionalProperties": False,
    }


def _tools(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The action schema's branches as OpenAI function tools (the `action` const becomes the name)."""
    out = []
    for branch in schema.get("anyOf", [schema]):
        props = {k: v for k, v in branch["properties"].items() if k != "action"}
        params = {"type": "object", "properties": props, "required": [k for k in branch["required"] if k != "action"], "additionalProperties": False}
        out.append({"type": "function", "function": {"name": branch["properties"]["action"]["const"], "parameters": params}})
    return out


def _schema_problem(value: Any, schema: dict[str, Any]) -> str | None:
    err = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    return None if err is None else err.message
