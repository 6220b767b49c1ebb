"""The orchestrator: samples whole plans for a question from any backend (holistic orchestration).

Its system prompt (a file beside this module) lists the agent types the task supports and shows few-shot
example plans; `degree` picks the prompt: `direct` (answer yourself), `single` (one agent), `dag` (any plan).
A question's N plans are one request (seeds `base + i`, `base` hashed from (seed, question)): the server
reads the ~1k-token prompt once for all of them. Samples differ within a question and across questions,
reproduce, and replay from the response cache. Parsing and validation happen here; an invalid plan
(including one cut off at the token limit, whose tokens stay on its trace) is a value, not an exception.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..llm import LLM, Completion, GenerateConfig, Message, violation
from ..tasks.scoring import extract_answer
from .agents.base import PROMPTS, render
from .completion import read_plan
from .options import TOOL_TYPES
from .plans import AGENT_TYPES, Plan, PlanError, plan_json_schema, validate_plan
from .run_config import RUN_VERSION, RolloutSettings, RunConfig
from .traces import LLMCall, OrchestratorInfo, PlanErrorRecord

#: How each run version draws its plan seeds (`OrchestratorConfig.seeds`; `RUN_VERSION` documents them).
SEEDS_BY_VERSION = {1: "index", 2: "question", 3: "group"}
SEED_SCHEMES = tuple(SEEDS_BY_VERSION.values())

# The opening of a JSON object: a brace and a quoted key.
_JSON_START = re.compile(r'\{\s*"')


@dataclass(frozen=True)
class OrchestratorConfig:
    """How the orchestrator samples plans. `sampling` holds the settings, each declared once on `RolloutSettings`
    (degree, temperature, top-p, `plan_max_tokens`, `prompt_examples`, `constrained`, seed); to them a run adds
    the checkpoint label its traces carry and the seed scheme of its version (`orchestrator_config`)."""

    sampling: RolloutSettings = field(default_factory=RolloutSettings)
    checkpoint: str = RunConfig.model_fields["checkpoint"].default
    # "group": plan i of a question is drawn with seed base + i, base hashed from (seed, question), and the
    # question's plans are sampled in one request. "question" (runs of version 2): a seed hashed from
    # (seed, i, question), one request per plan. "index" (version 1): seed + i for every question, so the
    # i-th plans of all questions share one random stream, and one stream's quirk (a first token that sends
    # every plan off into broken JSON) hits them all at once.
    seeds: str = SEEDS_BY_VERSION[RUN_VERSION]

    def __post_init__(self) -> None:
        if self.seeds not in SEED_SCHEMES:
            raise ConfigError(f"unknown seed scheme {self.seeds!r}", hint=f"use one of {', '.join(SEED_SCHEMES)}")

    def plan_seed(self, question: str, index: int) -> int:
        """The seed plan `index` of `question` is drawn with."""
        seed = self.sampling.seed
        if self.seeds == "index":
            return seed + index
        if self.seeds == "group":
            return self.group_seed(question) + index
        digest = hashlib.sha256(f"{seed}\0{index}\0{question}".encode()).digest()
        return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF

    def group_seed(self, question: str) -> int:
        """Plan 0's seed under the `group` scheme (room left below 2**31 for plan indices)."""
        digest = hashlib.sha256(f"{self.sampling.seed}\0group\0{question}".encode()).digest()
        return int.from_bytes(digest[:4], "big") & 0x3FFFFFFF


@dataclass
class PlanSample:
    """One sampled plan: the raw text, the call that produced it, and the parsed plan or why it is invalid."""

    index: int
    text: str
    call: LLMCall | None
    plan: Plan | None = None
    error: PlanErrorRecord | None = None
    info: OrchestratorInfo = field(default=None)  # type: ignore[assignment]


def system_prompt(degree: str, agent_types: tuple[str, ...], *, examples: bool = True) -> str:
    """The orchestrator's instructions; `examples=False` leaves out the worked example plans (an orchestrator
    trained from scratch starts from the bare instructions)."""
    if degree == "direct":
        return (PROMPTS / "orchestrator_direct.md").read_text().strip()
    lines = (PROMPTS / "agent_types.md").read_text().splitlines()
    types_text = "\n".join(ln for ln in lines if any(ln.startswith(f"- {t}:") for t in agent_types))
    # Arithmetic examples always (every pool has some arithmetic); retrieval ones where there is a corpus; a pool
    # offered tools alone sees its own one example.
    if set(agent_types) <= set(TOOL_TYPES):
        kinds = ["tools"]
    else:
        kinds = ["math", "search"] if "search" in agent_types else ["math"]
    prefix = "examples_single_" if degree == "single" else "examples_"
    shown = "\n\n".join((PROMPTS / f"{prefix}{k}.md").read_text().strip() for k in kinds) if examples else ""
    template = (PROMPTS / f"orchestrator_{degree}.md").read_text()
    return render(template, agent_types=types_text, examples=shown).strip()


class Orchestrator:
    """Samples and checks plans for one configuration (backend, degree, temperature, checkpoint label)."""

    def __init__(self, llm: LLM, config: OrchestratorConfig | None = None, agent_types: tuple[str, ...] = AGENT_TYPES):
        self.llm = llm
        self.config = config or OrchestratorConfig()
        self.agent_types = agent_types
        sampling = self.config.sampling
        self.system = system_prompt(sampling.degree, agent_types, examples=sampling.prompt_examples)
        self.prompt_id = hashlib.sha256(self.system.encode()).hexdigest()[:12]

    def messages(self, question: str) -> list[Message]:
        return plan_messages(self.system, question, self.config.sampling.degree)

    def info(self, index: int, plan_seed: int | None = None) -> OrchestratorInfo:
        s = self.config.sampling
        return OrchestratorInfo(
            backend=self.llm.backend.kind,
            model_id=self.llm.backend.model_id,
            checkpoint=self.config.checkpoint,
            degree=s.degree,
            temperature=s.temperature,
            top_p=s.top_p,
            max_tokens=s.plan_max_tokens,
            seed=s.seed,
            plan_seed=plan_seed,
            sample_index=index,
            constrained=s.constrained,
            prompt_id=self.prompt_id,
        )

    @property
    def grouped(self) -> bool:
        """A question's plans are sampled together (the `group` seed scheme)."""
        return self.config.seeds == "group"

    async def sample(self, question: str, n: int, *, indices: list[int] | None = None) -> list[PlanSample]:
        """Plans number `indices` (default 0..n-1) for `question`, each parsed and validated; under the
        `group` seed scheme sampled together (one request reads the prompt once)."""
        wanted = list(range(n)) if indices is None else indices
        if not self.grouped:
            return list(await asyncio.gather(*(self.sample_one(question, i) for i in wanted)))
        return await self._sample(question, wanted, self.config.group_seed(question))

    async def sample_one(self, question: str, index: int) -> PlanSample:
        """Plan number `index` for `question` (drawn with `config.plan_seed(question, index)`), parsed and validated."""
        c = self.config
        if self.grouped:
            [sample] = await self._sample(question, [index], c.group_seed(question))
            return sample
        # Versions 1 and 2: sample i is its own request seeded with its own seed (the keys its cache holds).
        [sample] = await self._sample(question, [0], c.plan_seed(question, index), as_index=index)
        return sample

    async def _sample(
        self, question: str, indices: list[int], seed: int, *, as_index: int | None = None
    ) -> list[PlanSample]:
        c = self.config.sampling
        messages = self.messages(question)
        schema = plan_json_schema(self.agent_types, c.degree) if c.constrained else None
        start = time.perf_counter()
        comps = await self.llm.agenerate(
            messages,
            category="plan",
            indices=indices,
            temperature=c.temperature,
            top_p=c.top_p,
            max_tokens=c.plan_max_tokens,
            seed=seed,
            json_schema=schema,
            strict=False,
        )
        cfg = self.llm.config.merge(max_tokens=c.plan_max_tokens, json_schema=schema)
        return [self._checked(question, messages, comp, cfg, start, as_index) for comp in comps]

    def _checked(
        self,
        question: str,
        messages: list[Message],
        comp: Completion,
        cfg: GenerateConfig,
        start: float,
        as_index: int | None,
    ) -> PlanSample:
        """A completion as a plan sample: its call (tokens included, even for a plan cut off at the limit),
        then the parsed plan or why it is invalid."""
        c = self.config
        index = comp.sample_index if as_index is None else as_index
        call = LLMCall.of(
            comp,
            messages,
            temperature=c.sampling.temperature,
            start_s=0.0,
            end_s=time.perf_counter() - start,
            sample_index=index,
        )
        sample = PlanSample(index, comp.text, call, info=self.info(index, c.plan_seed(question, index)))
        reason = violation(comp, cfg)
        if reason is not None:
            sample.error = PlanErrorRecord(rule="parse", message=reason)
            return sample
        try:
            sample.plan = self.check(comp.text)
        except PlanError as exc:
            sample.error = PlanErrorRecord(rule=exc.rule, message=exc.reason, agent=exc.agent)
        return sample

    def check(self, text: str) -> Plan:
        """Parse and validate orchestrator output under this orchestrator's degree and agent types."""
        return check_plan(text, degree=self.config.sampling.degree, agent_types=self.agent_types)


def plan_messages(system: str, question: str, degree: str) -> list[Message]:
    """The orchestrator's prompt for one question; training samples from exactly this, so a trained policy
    sees at rollout what it learned on."""
    user = f"Question: {question}" if degree == "direct" else f"Question: {question}\nPlan:"
    return [Message(role="system", content=system), Message(role="user", content=user)]


def check_plan(text: str, *, degree: str, agent_types: tuple[str, ...]) -> Plan:
    """Read (`mas.completion.read_plan`: the one reading of a completion) and validate orchestrator output under a
    degree and agent types; raises `PlanError`."""
    if degree == "direct":
        try:
            plan = read_plan(text)
        except PlanError as exc:
            # Scraping an answer out of broken JSON takes its debris for the answer ("7," from a cut
            # `{"answer": 7,`, "800" from "\ud800"): only a reply that is not JSON at all is read as prose.
            if exc.rule != "parse" or _JSON_START.search(text):
                raise
            answer = extract_answer(text)
            if answer is None:
                raise PlanError("parse", "no answer found in the orchestrator's direct reply") from None
            plan = Plan(answer=answer)
    else:
        plan = read_plan(text)
    return validate_plan(plan, degree=degree, agent_types=agent_types)
