"""Counterfactual collection: edit a run's executed plans, execute the edited plans, record each edit.

A counterfactual folder is the one owner of this contract:
- `counterfactual.json`: the `CounterfactualConfig` it was made with (source run, edit kinds, edits per plan,
  seed, the agent model); a resumed collection must match it (edits per plan and max plans may grow);
- `edits.jsonl`: one `EditRecord` per chosen edit, keyed by (question_id, source_index, edit_index) and
  written before the edit runs;
- `traces.jsonl`: one `Trace` per edit at plan_index `edited_index(source_index, edit_index)`: the edited
  plan's execution, or for an edit that made the plan invalid the invalid plan, unexecuted, with its rule.

An edit is done when its trace is on disk, so a collection killed at any point resumes executing only the
edits without one (a record without a trace is an edit killed mid-run). Edits are a pure, seeded function of
the plan (`edits.choose_edits`): a resumed collection chooses the same ones. Edited plans run under the source
run's own settings (its `run.json`) and on the model that ran its sub-agents, so an outcome that differs
differs by the edit; every call's tokens are on the edited trace (`execute`). Only valid, executed, scored
source plans with agents are edited; the rest are counted by reason. `load_counterfactual` is the one reader.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from .. import jsonl
from ..errors import ConfigError, RunFileError
from ..jsonl import JsonlWriter, RecordError
from ..llm import LLM, ensure_reachable
from ..mas.orchestrator import PlanSample
from ..mas.plans import Plan
from ..mas.rollout import RunConfig, build_trace
from ..mas.run_folder import read_run_config, run_questions, run_traces, settle_run_file
from ..mas.traces import TRACES_FILE, Trace, TraceWriter, find_traces, read_traces
from ..tasks import load_task
from ..tasks.base import Question, Task
from .edit_kinds import EDIT_KINDS, EditKind
from .edits import Edit, choose_edits

CONFIG_FILE = "counterfactual.json"
EDITS_FILE = "edits.jsonl"
EDITS_VERSION = 1
#: Edits per source plan at most: an edited trace's plan_index is source_index * this + edit_index.
MAX_EDITS_PER_PLAN = 64
#: Settings a resumed collection may change: more edits or plans extend it; the run folder may have moved.
GROWABLE = frozenset({"edits_per_plan", "max_plans", "run"})


class CounterfactualConfig(BaseModel):
    """What a counterfactual folder was made with."""

    version: int = EDITS_VERSION
    run: str = Field("", description="The source run folder.")
    task: str = Field("", description="The source run's task.")
    kinds: list[EditKind] = Field(default_factory=lambda: list(EDIT_KINDS), min_length=1)  # type: ignore[arg-type]
    edits_per_plan: int = Field(2, ge=1, le=MAX_EDITS_PER_PLAN)
    max_plans: int | None = Field(None, ge=1, description="Source plans edited at most (in run order); None: all.")
    seed: int = 0
    agent_model_id: str = Field("", description="The model that ran the source plans' sub-agents, and runs the edits'.")


class EditRecord(BaseModel):
    """One edit of one source plan: which plan, which edit, and whether the edited plan is valid."""

    version: Literal[1] = EDITS_VERSION
    task: str
    question_id: str
    source_index: int = Field(description="The source trace's plan_index in the run.")
    source_plan: str = Field(description="`plan_digest` of the source plan, so a pairing finds exactly that plan.")
    edit_index: int
    plan_index: int = Field(description=f"The edited trace's plan_index in the folder's {TRACES_FILE}.")
    kind: EditKind
    description: str
    valid: bool
    rule: str | None = Field(None, description="The rule an invalid edited plan breaks.")

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.question_id, self.source_index, self.edit_index)


@dataclass(frozen=True)
class Counterfactual:
    """An edit as the pair builder reads it: its record and its trace (None: chosen, never finished)."""

    edit: EditRecord
    trace: Trace | None


@dataclass
class CounterfactualProgress:
    """Counters a collection reports after each edit."""

    plans: int = 0  # source plans edited
    skipped: dict[str, int] = field(default_factory=dict)  # source traces not edited, by reason
    edits_total: int = 0
    edits_done: int = 0  # this sitting's, beside `resumed`
    invalid: int = 0
    executed: int = 0
    flipped: int = 0  # executed edits whose correctness differs from their source's: pairs to be
    tokens: int = 0
    resumed: int = 0

    def add(self, trace: Trace, source: Trace) -> None:
        ok, was = (trace.score.correct if trace.score else None), (source.score.correct if source.score else None)
        self.edits_done += 1
        self.invalid += 0 if trace.valid else 1
        self.executed += 1 if trace.executed else 0
        self.flipped += 1 if ok is not None and was is not None and ok != was else 0
        self.tokens += sum(t.total_tokens for t in trace.tokens.values())


def plan_digest(plan: Plan) -> str:
    """A short hash of a plan's JSON: what an edit record names its source plan by."""
    return hashlib.sha256(plan.to_json().encode()).hexdigest()[:16]


def edited_index(source_index: int, edit_index: int) -> int:
    return source_index * MAX_EDITS_PER_PLAN + edit_index


def entity_names(task: Task) -> list[list[str]]:
    """Names an entity swap may use, by group: a world's people, companies and cities (a mix: its members')."""
    members = getattr(task, "members", None)
    if isinstance(members, dict):
        return [g for member in members.values() for g in entity_names(member)]
    world = getattr(task, "world", None)
    groups = [getattr(world, part, None) for part in ("people", "companies", "cities")]
    return [sorted(g) for g in groups if isinstance(g, dict) and g]


def _parse_edit(value: Any) -> EditRecord:
    version = value.get("version") if isinstance(value, dict) else None  # not an object: no version at all
    if version != EDITS_VERSION:
        raise RecordError(f"edit record version {version!r}, this orchrm reads version {EDITS_VERSION}")
    return EditRecord.model_validate(value)


def read_edits(path: Path, *, repair: bool = False) -> list[EditRecord]:
    """Every edit record of an edits file, the first of each key (a kill may leave one twice)."""
    first: dict[tuple[str, int, int], EditRecord] = {}
    for record in jsonl.read(path, _parse_edit, "edit record", repair=repair):
        first.setdefault(record.key, record)
    return list(first.values())


def load_counterfactual(folder: Path) -> list[Counterfactual]:
    """A counterfactual folder's edits, each with its trace (the first of its key) or None."""
    if not (folder / EDITS_FILE).is_file():
        raise RunFileError(f"{folder} holds no {EDITS_FILE}", hint="pass a folder made by `orchrm counterfactual`")
    traces: dict[tuple[str, int], Trace] = {}
    for t in read_traces(find_traces(folder) or folder / TRACES_FILE):
        traces.setdefault(t.key, t)
    return [Counterfactual(e, traces.get((e.question_id, e.plan_index))) for e in read_edits(folder / EDITS_FILE)]


def _differences(new: CounterfactualConfig, old: CounterfactualConfig) -> list[str]:
    mine, theirs = new.model_dump(), old.model_dump()
    return [f"{k}: {theirs[k]!r} -> {mine[k]!r}" for k in mine if k not in GROWABLE and mine[k] != theirs.get(k)]


def _skip_reason(t: Trace) -> str | None:
    """Why a source trace is not edited (None: it is)."""
    if not t.valid:
        return "invalid plan"
    if not t.executed:
        return "not executed"
    if t.plan is None or not t.plan.agents:
        return "no agents (a direct answer)"
    if t.score is None or t.score.error is not None or t.score.correct is None:
        return "no score"
    return None


def _sources(
    traces: list[Trace], questions: dict[str, Question], limit: int | None, progress: CounterfactualProgress
) -> list[Trace]:
    """The traces to edit, in run order (its questions' order, then plan index), the rest counted by reason."""
    skipped: Counter[str] = Counter()
    chosen: list[Trace] = []
    position = {q: i for i, q in enumerate(questions)}
    for t in sorted(traces, key=lambda t: (position[t.question_id], t.plan_index)):
        reason = _skip_reason(t)
        if reason is None and limit is not None and len(chosen) >= limit:
            reason = "over --max-plans"
        if reason is None:
            chosen.append(t)
        else:
            skipped[reason] += 1
    progress.skipped = dict(skipped)
    return chosen


async def acollect_counterfactuals(
    run: Path,
    out: Path,
    agent_llm: LLM,
    config: CounterfactualConfig | None = None,
    *,
    task: Task | None = None,
    parallel: int = 4,
    on_progress: Callable[[CounterfactualProgress], None] | None = None,
) -> CounterfactualProgress:
    """Edit the run's executed plans and execute the edits not yet on disk in `out`; returns the counters.

    `task` defaults to the run's own (`load_task` of its name). Nothing is written before the run is read,
    the agent model answers, and it is the one the run's sub-agents ran on."""
    rc = read_run_config(run)
    the_task = task or load_task(rc.task)
    questions = {q.id: q for q in run_questions(the_task, rc.n_questions, rc.split, rc.seed, rc.skip_questions)}
    traces = run_traces(read_traces(find_traces(run) or run / TRACES_FILE), questions, rc.n_plans)
    cfg = (config or CounterfactualConfig()).model_copy(
        update={"run": str(run), "task": rc.task, "agent_model_id": agent_llm.backend.model_id}
    )
    progress = CounterfactualProgress()
    sources = _sources(traces, questions, cfg.max_plans, progress)
    _check_agent_model(run, sources, agent_llm)
    await ensure_reachable(agent_llm, "agent")
    settle_run_file(out, cfg, _differences, name=CONFIG_FILE, what="a counterfactual collection", kind="counterfactual")
    records = {r.key: r for r in read_edits(out / EDITS_FILE, repair=True)}
    done = {t.key for t in read_traces(out / TRACES_FILE, repair=True)}
    work = _planned(sources, questions, cfg, entity_names(the_task), progress)
    _check_records(out, records, work)
    sem = asyncio.Semaphore(parallel)
    with JsonlWriter(out / EDITS_FILE) as edits_out, TraceWriter(out / TRACES_FILE) as traces_out:
        pending: list[tuple[Trace, EditRecord, Edit]] = []
        for source, record, edit in work:
            if record.key not in records:  # the record first: a trace is never on disk without its edit
                edits_out.write(record)
            if (record.question_id, record.plan_index) in done:
                progress.resumed += 1
            else:
                pending.append((source, record, edit))
        if on_progress:
            on_progress(progress)

        async def one(source: Trace, record: EditRecord, edit: Edit) -> None:
            async with sem:
                q = questions[source.question_id]
                trace = await _run_edit(source, q, record.plan_index, edit, the_task, agent_llm, rc)
            traces_out.write(trace)
            progress.add(trace, source)
            if on_progress:
                on_progress(progress)

        await asyncio.gather(*(one(*p) for p in pending))
    return progress


def _planned(
    sources: list[Trace],
    questions: dict[str, Question],
    cfg: CounterfactualConfig,
    names: list[list[str]],
    progress: CounterfactualProgress,
) -> list[tuple[Trace, EditRecord, Edit]]:
    """Each source plan's chosen edits with their records (pure and seeded: a resume chooses the same)."""
    work = []
    plans = 0
    for s in sources:
        assert s.plan is not None
        seed = f"{cfg.seed}:{s.question_id}:{s.plan_index}"
        edits = choose_edits(s.plan, questions[s.question_id], cfg.kinds, cfg.edits_per_plan, seed, names)
        if not edits:
            progress.skipped["no edit applies"] = progress.skipped.get("no edit applies", 0) + 1
        plans += 1 if edits else 0
        work += [(s, _record(cfg.task, s, i, e), e) for i, e in enumerate(edits)]
    progress.plans, progress.edits_total = plans, len(work)
    return work


def _check_records(
    out: Path, records: dict[tuple[str, int, int], EditRecord], work: list[tuple[Trace, EditRecord, Edit]]
) -> None:
    """A resumed collection must choose the edits it recorded (another orchrm's edit rules would not)."""
    for _, record, _ in work:
        held = records.get(record.key)
        if held is not None and held != record:
            raise ConfigError(
                f"{out / EDITS_FILE} records another edit for {record.question_id}#{record.source_index} edit "
                f"{record.edit_index} ({held.description!r}, now {record.description!r})",
                hint="use a new --out folder",
            )


def _check_agent_model(run: Path, sources: Iterable[Trace], agent_llm: LLM) -> None:
    """Edits run on the model the run's sub-agents ran on: else an outcome that differs may be the model's."""
    theirs = sorted({t.agent_model for t in sources})
    ours = agent_llm.backend.model_id
    if any(m != ours for m in theirs):
        raise ConfigError(
            f"{run} ran its sub-agents on {', '.join(theirs)}; these edits would run on {ours}",
            hint="pass the run's agent model (--agent-model, or --model when one model ran both)",
        )


def _record(task: str, source: Trace, index: int, edit: Edit) -> EditRecord:
    assert source.plan is not None
    return EditRecord(
        task=task,
        question_id=source.question_id,
        source_index=source.plan_index,
        source_plan=plan_digest(source.plan),
        edit_index=index,
        plan_index=edited_index(source.plan_index, index),
        kind=edit.kind,
        description=edit.description,
        valid=edit.valid,
        rule=edit.error.rule if edit.error else None,
    )


async def _run_edit(
    source: Trace, question: Question, plan_index: int, edit: Edit, task: Task, agent_llm: LLM, rc: RunConfig
) -> Trace:
    """The edited plan's trace: executed under the run's settings, or (invalid) recorded unexecuted with its rule."""
    sample = PlanSample(plan_index, edit.text, None, plan=edit.plan, error=edit.error, info=source.orchestrator)
    return await build_trace(sample, question, task, agent_llm, rc, execute=True)
