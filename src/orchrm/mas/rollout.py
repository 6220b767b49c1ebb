"""Rollouts: a task's questions x N sampled plans x execution -> one trace each, in a resumable run folder.

Every finished (question, plan) is appended to `traces.jsonl` at once and fsynced, so a rollout killed at
any point (even `kill -9`) keeps every finished record; re-running the same command reads what is there,
discards a torn last line, and does only the missing (question, plan) pairs. Plans are sampled with fixed
seeds and replay from the response cache, so a resumed question gets the same plans it would have had.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, OrchrmError
from ..llm import LLM, ensure_reachable
from ..tasks.base import Question, Task
from .agents import AgentSettings
from .executor import ExecutorConfig, execute_plan
from .options import TOOL_TYPES
from .orchestrator import SEEDS_BY_VERSION, Orchestrator, OrchestratorConfig, PlanSample
from .plans import AGENT_TYPES
from .run_config import RUN_VERSION, RolloutSettings, RunConfig
from .run_folder import RunFile, first_plans, open_run_file, rollout_differences, run_questions, run_traces
from .traces import TRACES_FILE, ScoreRecord, Trace, TraceWriter, find_traces, read_traces, token_totals


def orchestrator_config(config: RunConfig) -> OrchestratorConfig:
    """The orchestrator's settings for a run: its sampling, seeded as the run's version seeds."""
    seeds = SEEDS_BY_VERSION.get(config.version, SEEDS_BY_VERSION[RUN_VERSION])
    return OrchestratorConfig(config, checkpoint=config.checkpoint, seeds=seeds)


def executor_config(settings: RolloutSettings, max_parallel: int = 4) -> ExecutorConfig:
    """The executor's settings for a rollout: the sub-agents' budgets and timeout."""
    return ExecutorConfig(settings=AgentSettings(settings), max_parallel=max_parallel)


def agent_fields(llm: LLM, agent_llm: LLM | None = None) -> dict[str, str]:
    """`RunConfig`'s orchestrator name and agent fields for these LLMs: the agents' empty when they run on `llm`."""
    own = {"model_name": llm.backend.display_name}
    if agent_llm is None or agent_llm is llm:
        return own | {"agent_backend": "", "agent_model_id": "", "agent_model_name": ""}
    backend = agent_llm.backend
    return own | {
        "agent_backend": backend.kind,
        "agent_model_id": backend.model_id,
        "agent_model_name": backend.display_name,
    }


def _version_kept(new: RunConfig, old: RunConfig) -> RunConfig:
    """A run resumes sampling as it began: one made at an older version keeps it (version 1: seed + plan index,
    version 2: a request per plan, so its resumed questions get the plans they would have had). A newer one
    is a difference, refused."""
    return new.model_copy(update={"version": old.version}) if old.version < new.version else new


def open_run_dir(out: Path, config: RunConfig) -> RunFile[RunConfig]:
    """Create the folder, or check that an existing one was made with the same settings; writes nothing. Its
    `config` is what the run goes on with (an older run's version kept)."""
    return open_run_file(out, config, rollout_differences, stamp=True, kept=_version_kept, kind="rollout")


def prepare_run_dir(out: Path, config: RunConfig) -> RunConfig:
    """`open_run_dir`, with `run.json` written at once; returns the settings the run goes on with."""
    run_file = open_run_dir(out, config)
    run_file.write()
    return run_file.config


@dataclass
class Progress:
    """Counters a rollout reports after each record."""

    questions_total: int = 0
    questions_done: int = 0
    plans_total: int = 0
    plans_done: int = 0
    plans_valid: int = 0
    correct: int = 0
    tokens: int = 0
    resumed: int = 0

    def add(self, trace: Trace, *, question_done: bool = False) -> None:
        """Count `trace` in; `question_done`: it was its question's last missing plan (one report for both)."""
        self.plans_done += 1
        if question_done:
            self.questions_done += 1
        self.plans_valid += int(trace.valid)
        self.correct += int(bool(trace.score and trace.score.correct))
        self.tokens += sum(t.total_tokens for t in trace.tokens.values())


@dataclass
class RolloutResult:
    """What a rollout wrote: the settings it went on with (an older run's version kept), its questions in the
    order it ran them, the traces file and the final counters. `traces` and `first_plans` read the file back
    by the run folder's one rule (`run_traces`), so a caller never derives the questions again."""

    config: RunConfig
    questions: list[Question]
    traces_path: Path
    progress: Progress

    @property
    def question_ids(self) -> list[str]:
        return [q.id for q in self.questions]

    def traces(self) -> list[Trace]:
        """The run's traces as the file holds them, in file order: its questions' first N plans."""
        return run_traces(read_traces(self.traces_path), self.question_ids, self.config.n_plans)

    def first_plans(self, n: int | None = None) -> dict[str, list[Trace]]:
        """The run's traces by question, each question's first `n` plans (default the run's N) in index order."""
        return first_plans(read_traces(self.traces_path), self.question_ids, self.config.n_plans if n is None else n)


def agent_types_for(task: Task) -> tuple[str, ...]:
    """The types the task names (`Task.agent_types`), else every LLM type, `search` only with a corpus."""
    if task.agent_types is not None:
        return task.agent_types
    return tuple(t for t in AGENT_TYPES if t not in TOOL_TYPES and (t != "search" or task.corpus is not None))


async def score_trace(task: Task, trace: Trace, question: Question) -> ScoreRecord:
    """The task scorer's verdict; a scorer that fails is recorded as an error, never as a zero."""
    try:
        value, ok = await asyncio.to_thread(task.correct, trace.final_answer, question)
    except OrchrmError as exc:
        return ScoreRecord(error=f"{type(exc).__name__}: {exc}")
    return ScoreRecord(value=value, correct=ok)


def question_template(question: Question) -> str | None:
    """`kind.template` of a templated question (the template alone when it has no kind), else None."""
    template, kind = question.metadata.get("template"), question.metadata.get("kind")
    if not isinstance(template, str) or not template:
        return None
    return f"{kind}.{template}" if isinstance(kind, str) and kind else template


async def build_trace(
    sample: PlanSample, question: Question, task: Task, agent_llm: LLM, config: RunConfig, *, execute: bool
) -> Trace:
    """The trace of a sampled plan, its agents executed on `agent_llm` when `execute`."""
    trace = Trace(
        task=config.task,
        split=config.split,
        question_id=question.id,
        question=question.question,
        gold=question.answer,
        plan_index=sample.index,
        plan_text=sample.text,
        plan=sample.plan,
        plan_error=sample.error,
        orchestrator=sample.info,
        plan_call=sample.call,
        question_kind=question.metadata.get("kind"),
        question_template=question_template(question),
        agent_backend=agent_llm.backend.kind,
        agent_model_id=agent_llm.backend.model_id,
    )
    if sample.plan is not None and (execute or not sample.plan.agents):
        ex = await execute_plan(
            sample.plan, question.question, agent_llm, retriever=task.corpus, config=executor_config(config)
        )
        trace.executed = True
        trace.agents, trace.errors = ex.agents, ex.errors
        trace.final_agent, trace.final_output, trace.final_answer = ex.final_agent, ex.final_output, ex.final_answer
        trace.wall_s, trace.llm_busy_s = ex.wall_s, ex.llm_busy_s
        trace.score = await score_trace(task, trace, question)
    trace.tokens = token_totals(sample.call, trace.agents)
    return trace


async def ensure_models_reachable(llm: LLM, agent_llm: LLM | None = None) -> None:
    """Check that the orchestrator's model (`llm`) answers, and the agents' model when it is another one, before
    a run touches its folder: an unreachable model is one error that names its role."""
    await ensure_reachable(llm, "orchestrator")
    if agent_llm is not None and agent_llm is not llm:
        await ensure_reachable(agent_llm, "agent")


async def arollout(
    task: Task,
    llm: LLM,
    out: Path,
    config: RunConfig,
    *,
    agent_llm: LLM | None = None,
    parallel_questions: int = 2,
    on_progress: Callable[[Progress], None] | None = None,
    on_question: Callable[[Question, list[Trace]], None] | None = None,
) -> RolloutResult:
    """Sample and execute the missing (question, plan) pairs of a run; returns what it wrote (`RolloutResult`:
    the questions, the traces file, the final counters). `on_question(question, plans)` is told of each question
    as soon as its first N plans are all held (in plan order; a question complete before the run began, at once),
    so work on one question's plans can start while the others still run.

    A new folder's `run.json` is written before the first plan; a resume that grows the run (more questions
    or plans) rewrites it only after every plan has run, so a resume that fails leaves it byte for byte.
    `llm` writes the plans; `agent_llm` (default: `llm`) runs the sub-agents. Both are checked to answer
    before the run folder is touched, so an unreachable model is one error and nothing written.
    """
    agents = agent_llm or llm
    await ensure_models_reachable(llm, agents)
    run_file = _opened(out, config)
    config = run_file.config
    found, existing = _held_traces(out)
    questions = run_questions(task, config.n_questions, config.split, config.seed, config.skip_questions)
    done, progress = _resumed(existing, questions, config.n_plans)
    report = on_progress or (lambda p: None)
    report(progress)
    told = _Told(on_question, config.n_plans, existing, questions)
    if progress.questions_done == len(questions):  # `_resumed` counted every question already complete
        return RolloutResult(config, questions, found, progress)  # nothing to run: a packed run needs no unpacking
    orchestrator = Orchestrator(llm, orchestrator_config(config), agent_types_for(task))
    sem = asyncio.Semaphore(parallel_questions)

    with TraceWriter(out / TRACES_FILE) as writer:

        async def one_question(q: Question) -> None:
            missing = [i for i in range(config.n_plans) if i not in done.get(q.id, set())]
            if not missing:
                return
            left = len(missing)
            async with sem:

                async def run(sample: PlanSample) -> None:
                    nonlocal left
                    trace = await build_trace(sample, q, task, agents, config, execute=config.execute == "all")
                    writer.write(trace)
                    left -= 1
                    progress.add(trace, question_done=not left)
                    report(progress)
                    told.add(q, trace)

                await _sample_and_run(orchestrator, q.question, config.n_plans, missing, run)

        await asyncio.gather(*(one_question(q) for q in questions))
    run_file.write()  # a resume that grew the run records it only once it has run: a failed one leaves run.json
    return RolloutResult(config, questions, out / TRACES_FILE, progress)


def _opened(out: Path, config: RunConfig) -> RunFile[RunConfig]:
    """The run folder, opened (`open_run_dir`); a new one records its settings before any trace, so a killed run
    resumes as the same run."""
    run_file = open_run_dir(out, config)
    if run_file.new:
        run_file.write()
    return run_file


async def _sample_and_run(
    orchestrator: Orchestrator,
    question: str,
    n_plans: int,
    missing: list[int],
    run: Callable[[PlanSample], Awaitable[None]],
) -> None:
    """Sample a question's `missing` plans and `run` each. Grouped: in one request (the prompt read once; a plan
    killed before it was written comes back from the response cache on resume, not from the server). Runs of
    version 1 and 2: a request per plan, each run as soon as it is sampled."""
    if orchestrator.grouped:
        samples = await orchestrator.sample(question, n_plans, indices=missing)
        await asyncio.gather(*(run(s) for s in samples))
        return

    async def one(index: int) -> None:
        await run(await orchestrator.sample_one(question, index))

    await asyncio.gather(*(one(i) for i in missing))


def _held_traces(out: Path) -> tuple[Path, list[Trace]]:
    """A run folder's traces file and what it holds. A finished run may be stored gzipped: read, never repaired
    (nor appended to: `TraceWriter` refuses it)."""
    found = find_traces(out) or out / TRACES_FILE
    return found, read_traces(found, repair=found.suffix != ".gz")


def _resumed(existing: list[Trace], questions: list[Question], n_plans: int) -> tuple[dict[str, set[int]], Progress]:
    """The (question, plan) pairs a run folder already holds for these questions (`first_plans`: each counted
    once), and the counters that start from them."""
    held = first_plans(existing, [q.id for q in questions], n_plans)
    progress = Progress(questions_total=len(questions), plans_total=len(questions) * n_plans)
    for plans in held.values():
        for t in plans:
            progress.add(t)
        progress.resumed += len(plans)
        progress.questions_done += int(len(plans) == n_plans)
    return {q: {t.plan_index for t in plans} for q, plans in held.items() if plans}, progress


class _Told:
    """Tells `on_question` of each question once its first N plans are all held: the resumed ones and the new."""

    def __init__(
        self,
        on_question: Callable[[Question, list[Trace]], None] | None,
        n_plans: int,
        existing: list[Trace],
        questions: list[Question],
    ) -> None:
        """Told at once of the questions whose first N plans `existing` (a resumed run's traces) already holds."""
        self.on_question, self.n_plans = on_question, n_plans
        self.plans: dict[str, list[Trace]] = {}
        if on_question is not None:
            held = first_plans(existing, [q.id for q in questions], n_plans)
            for q in questions:
                self.held(q, held[q.id])

    def held(self, q: Question, plans: list[Trace]) -> None:
        self.plans[q.id] = list(plans)
        self._check(q)

    def add(self, q: Question, trace: Trace) -> None:
        self.plans.setdefault(q.id, []).append(trace)
        self._check(q)

    def _check(self, q: Question) -> None:
        plans = self.plans[q.id]
        if self.on_question is not None and len(plans) == self.n_plans:
            self.on_question(q, sorted(plans, key=lambda t: t.plan_index))


async def replay(
    trace: Trace, task: Task, llm: LLM, config: RunConfig | None = None, *, agent_llm: LLM | None = None
) -> Trace:
    """Re-execute a trace's plan, its sub-agents on `agent_llm` (default `llm`), with fresh calls unless the
    response cache has them; the plan itself is not sampled again."""
    if trace.plan is None:
        raise ConfigError(f"trace {trace.question_id}#{trace.plan_index} has no valid plan to execute")
    cfg = config or RunConfig(task=trace.task)
    kind = {"kind": trace.question_kind} if trace.question_kind else {}
    if trace.question_template:
        kind["template"] = trace.question_template.rpartition(".")[2]
    question = Question(id=trace.question_id, question=trace.question, answer=trace.gold or "", metadata=kind)
    sample = PlanSample(trace.plan_index, trace.plan_text, trace.plan_call, plan=trace.plan, info=trace.orchestrator)
    start = time.perf_counter()
    new = await build_trace(sample, question, task, agent_llm or llm, cfg, execute=True)
    new.wall_s = new.wall_s or time.perf_counter() - start
    return new
