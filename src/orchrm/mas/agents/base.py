"""What every sub-agent shares: its run context (question, resolved input, LLM, retriever) and its calls log."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from ...llm import LLM, Completion, Message
from ...tasks.base import Retriever
from ...tasks.scoring import answer_key, extract_answer
from ..options import CATALOG, OptionBound
from ..plans import AgentSpec
from ..run_config import AgentContext, RolloutSettings
from ..traces import LLMCall

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"
T = TypeVar("T")


def prompt(name: str) -> str:
    """A prompt file from mas/prompts/ (read each time: they are small, and edits show up at once)."""
    return (PROMPTS / name).read_text()


def render(template: str, **values: str) -> str:
    """Fill `{name}` slots; other braces (JSON in examples) are left alone."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


class _Setting(Generic[T]):
    """An `AgentSettings` attribute: a `RolloutSettings` field read under the name an agent uses. The field's name
    is checked when the class is made, so a view that no longer matches the model fails at import."""

    def __init__(self, name: str) -> None:
        if name not in RolloutSettings.model_fields:
            raise TypeError(f"RolloutSettings has no field {name!r}")
        self.name = name

    def __get__(self, view: AgentSettings | None, owner: type | None = None) -> T:
        if view is None:  # read on the class (help, introspection): the descriptor itself
            return self  # type: ignore[return-value]
        return getattr(view.rollout, self.name)


@dataclass(frozen=True)
class AgentSettings:
    """What a sub-agent reads of its rollout's settings. A view that declares nothing: each setting (default,
    bounds, help) is a `RolloutSettings` field, so `AgentSettings(RolloutSettings(agent_max_tokens=64))` sets that
    one and leaves the others at their defaults.

    The plan decides structure; these decide how each call samples, what budgets clip a plan's `samples` and
    `rounds`, how long an agent may run, and who sees the original question. A small agent shown the question
    beside its sub-task answers the question instead (a hop-1 "find the company X works for" answered with a
    year), so by default only the final agent, which must answer it, sees it, and the plan writes into each
    earlier agent's input what it needs; `all` is the old behaviour, kept to measure one against the other."""

    rollout: RolloutSettings = field(default_factory=RolloutSettings)

    max_tokens = _Setting[int]("agent_max_tokens")
    temperature = _Setting[float]("agent_temperature")
    sample_temperature = _Setting[float]("agent_sample_temperature")
    seed = _Setting[int]("seed")
    timeout_s = _Setting[float]("agent_timeout_s")
    max_samples = _Setting[int | None]("agent_max_samples")
    max_rounds = _Setting[int | None]("agent_max_rounds")
    question_context = _Setting[AgentContext]("agent_context")


@dataclass
class AgentRun:
    """One agent's execution: what it is asked, and the log of its LLM calls (kept even if it times out)."""

    llm: LLM
    question: str
    task_input: str
    settings: AgentSettings
    retriever: Retriever | None = None
    is_final: bool = True
    t0: float = field(default_factory=time.perf_counter)
    calls: list[LLMCall] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)

    async def generate(
        self,
        user: str,
        *,
        system: str | None = None,
        n: int = 1,
        temperature: float | None = None,
        max_tokens: int | None = None,
        history: list[Message] | None = None,
    ) -> list[Completion]:
        """Sample `n` completions under the `execute` category and log each as an `LLMCall`."""
        messages = [*(history or []), Message(role="user", content=user)]
        if system is not None:
            messages = [Message(role="system", content=system), *messages]
        temp = self.settings.temperature if temperature is None else temperature
        start = time.perf_counter() - self.t0
        completions = await self.llm.agenerate(
            messages,
            category="execute",
            n=n,
            temperature=temp,
            max_tokens=max_tokens or self.settings.max_tokens,
            seed=self.settings.seed,
        )
        end = time.perf_counter() - self.t0
        self.calls.extend(LLMCall.of(c, messages, temperature=temp, start_s=start, end_s=end) for c in completions)
        return completions


@dataclass
class AgentResult:
    output: str
    answer: str | None


class Agent:
    """A sub-agent type. Subclasses set `type` and implement `run`; options come validated from the plan.

    `option_bounds` is what a plan may set for this type, taken from `mas.options.CATALOG` by `type` when the
    class is made: the validator checks a plan against it, parsing drops (and notes) any other option, and
    the constrained-decoding schema is built from it. `defaults` fills what the plan leaves out."""

    type: ClassVar[str]
    option_bounds: ClassVar[dict[str, OptionBound]] = {}
    defaults: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.type not in CATALOG:
            raise TypeError(f"agent type {cls.type!r} is not in mas.options.CATALOG")
        cls.option_bounds = CATALOG[cls.type]

    def __init__(self, spec: AgentSpec) -> None:
        self.spec = spec
        self.options = {**self.defaults, **spec.options}

    async def run(self, run: AgentRun) -> AgentResult:
        raise NotImplementedError

    def count(self, run: AgentRun, name: str) -> int:
        """A count option (`samples`, `rounds`) as the plan set it, clipped to the run's budget."""
        value = int(self.options[name])
        cap = {"samples": run.settings.max_samples, "rounds": run.settings.max_rounds}.get(name)
        return value if cap is None else min(value, cap)


def shows_question(run: AgentRun) -> bool:
    mode = run.settings.question_context
    return mode == "all" or (mode == "final" and run.is_final)


def context_block(run: AgentRun) -> str:
    """The original question as a prompt section, or nothing when this agent works on its sub-task alone."""
    return f"Original question:\n{run.question}\n\n" if shows_question(run) else ""


def task_prompt(run: AgentRun) -> str:
    return render(prompt("agent_task.txt"), context=context_block(run), task=run.task_input)


def system_prompt() -> str:
    return prompt("agent_system.txt")


def majority(answers: list[str | None]) -> tuple[str | None, dict[str, int]]:
    """The most common answer (first seen wins ties) and the vote counts by `answer_key`, the key every
    vote in orchrm uses; None if nobody answered (an answer with no key, like "the", is no vote)."""
    keyed = [(k, a) for a in answers if a and (k := answer_key(a)) is not None]
    if not keyed:
        return None, {}
    counts = Counter(k for k, _ in keyed)
    best = max(counts.values())
    winner = next(a for k, a in keyed if counts[k] == best)
    return winner, dict(counts)


def answer_of(text: str) -> str | None:
    return extract_answer(text)
