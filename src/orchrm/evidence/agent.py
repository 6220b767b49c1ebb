"""The evaluator agent: ONE loop with progressive disclosure over reward-evaluation skills.

The agent first sees only the skills' names and descriptions. Its actions: use_skill, list_resources,
view_resource, run_verifier, run_python (sandbox), final_answer. Actions are JSON objects decoded under a
JSON schema that only admits the actions (and skill / resource names) available in the current state, so
a constrained server cannot emit an unknown tool; a server that does not enforce schemas is checked
client-side. Every fallback — an invalid action, an LLM error, forced finalisation at the step limit, no
final answer — is recorded in `AgentOutcome.flags`; none turns into a default score.

Here: the loop, its error policy and the prompts. The tools are one table (`_agent_tools.py`); how the
model is asked for an action, constrained JSON or native tool calls, is one of two adapters
(`_agent_protocols.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import LLMError, SchemaViolation
from ..llm import LLM, Message, TokenCount
from ..sandbox import SandboxLimits
from ._agent_protocols import PROTOCOLS, Action, invalid_action
from ._agent_tools import ACTIONS, AgentRun, act, action_object, action_schema
from ._usage import count_violation
from .aggregate import Evidence
from .skills import Skill

_PROMPTS = Path(__file__).with_name("prompts")
__all__ = ["ACTIONS", "AgentConfig", "AgentOutcome", "EvaluatorAgent", "JudgeTask", "Step"]


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
    tokens: TokenCount = field(default_factory=TokenCount)

    @property
    def prompt_tokens(self) -> int:
        return self.tokens.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.tokens.completion_tokens

    @property
    def calls(self) -> int:
        return self.tokens.calls


@dataclass(frozen=True)
class AgentConfig:
    max_steps: int = 6
    max_tokens: int = 320
    temperature: float = 0.0
    observation_chars: int = 1500
    category: str = "verify"
    sandbox: SandboxLimits = SandboxLimits()
    protocol: Literal["auto", "json", "tools"] = "auto"


@dataclass(frozen=True)
class _Mode:
    """What differs between judging one response and two: the prompt's wording and the final answer."""

    what: str
    target_hint: str
    final_hint: str
    final_props: dict[str, Any]


_MODES = {
    "pointwise": _Mode(
        "one response to a question",
        "",
        (
            '{"action": "final_answer", "reason": ONE SENTENCE, "score": 0..1, "confidence": 0..1}: '
            "your judgment (1 = correct)."
        ),
        {"score": {"type": "number", "minimum": 0, "maximum": 1}},
    ),
    "pairwise": _Mode(
        "which of two responses (A, B) to a question is better",
        ', "target": "A"|"B"|"both"',
        (
            '{"action": "final_answer", "reason": ONE SENTENCE, "verdict": "A"|"B"|"tie", "confidence": 0..1}: '
            "your judgment."
        ),
        {"verdict": {"enum": ["A", "B", "tie"]}},
    ),
}


class EvaluatorAgent:
    """Runs the loop for one task at a time; stateless between runs, so runs may go concurrently."""

    def __init__(self, llm: LLM, skills: list[Skill], config: AgentConfig | None = None) -> None:
        self.llm = llm
        self.skills = {s.name: s for s in skills}
        self.config = config or AgentConfig()

    async def run(self, task: JudgeTask) -> AgentOutcome:
        cfg = self.config
        run = AgentRun(
            task, self.skills, cfg, PROTOCOLS[self._protocol()], {k: list(v) for k, v in task.prior_evidence.items()}
        )
        messages = [
            Message(role="system", content=self._system_prompt(task)),
            Message(role="user", content=self._task_prompt(task)),
        ]
        final = _final_schema(task)
        for step in range(cfg.max_steps):
            last = step == cfg.max_steps - 1
            if last:
                run.flags.append("forced_finalization")
                messages.append(Message(role="user", content="Step limit reached: reply with final_answer now."))
            got = await self._next_action(run, messages, action_schema(run, final, final_only=last))
            if run.stopped:
                break
            if got is None:
                continue
            action, text = got
            name, args = action.get("action"), {k: v for k, v in action.items() if k != "action"}
            if name == "final_answer":
                run.final = args
                run.steps.append(Step("final_answer", args, ""))
                break
            observation = await act(run, name, args)
            run.steps.append(Step(name, args, observation))
            messages += [
                Message(role="assistant", content=text),
                Message(
                    role="user",
                    content=f"Observation:\n{observation[: cfg.observation_chars]}\n"
                    f"(steps left: {cfg.max_steps - step - 1})",
                ),
            ]
        if run.final is None:
            run.flags.append("no_final_answer")
        return AgentOutcome(run.final, run.evidence, run.steps, run.flags, sorted(run.used), run.tokens)

    async def _next_action(self, run: AgentRun, messages: list[Message], schema: dict[str, Any]) -> Action | None:
        """The error policy: an invalid reply is flagged and the model told (the loop goes on); any other
        failure of the model call is flagged and stops the run."""
        try:
            return await run.protocol.next_action(self.llm, messages, schema, run)
        except SchemaViolation as exc:
            count_violation(run.tokens, exc)
            invalid_action(run, messages, exc.text, exc.message, "Reply with one JSON action.")
        except LLMError as exc:
            run.flags.append(f"llm_error: {exc}")
            run.stopped = True
        return None

    def _protocol(self) -> str:
        if self.config.protocol != "auto":
            return self.config.protocol
        # llama.cpp's server (the local backend) is driven by constrained JSON; served models by native tools.
        return "tools" if self.llm.backend.kind == "openai" else "json"

    def _system_prompt(self, task: JudgeTask) -> str:
        catalog = "\n".join(f"- {s.name}: {s.description}" for s in self.skills.values())
        mode = _MODES[task.mode]
        template = (_PROMPTS / "agent_system.txt").read_text()
        return template.format(
            what=mode.what,
            target_hint=mode.target_hint,
            final_hint=mode.final_hint,
            max_steps=self.config.max_steps,
            catalog=catalog,
        )

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
        note = (
            "A reference answer is available to the verifiers.\n"
            if task.reference is not None
            else "No reference answer is available.\n"
        )
        return (
            (_PROMPTS / "agent_task.txt")
            .read_text()
            .format(
                question=task.question,
                responses=responses,
                reference_note=note,
                evidence="\n".join(lines) or "(none)",
                suggested=", ".join(suggested),
            )
        )


def _final_schema(task: JudgeTask) -> dict[str, Any]:
    props = {"reason": {"type": "string", "maxLength": 400}, **_MODES[task.mode].final_props}
    return action_object("final_answer", {**props, "confidence": {"type": "number", "minimum": 0, "maximum": 1}})
