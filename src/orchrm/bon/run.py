"""`abon`: best-of-N on held-out questions — sample N plans once, execute them, judge them, and compare every
selection method on the same plans. In two parts: `aheldout` is the model's work, which needs no RM (the
rollout, each question judged as soon as its plans are in, beside the rollout still running), and `aselect` the
RM's scoring and the results; the loop runs the first beside its training.

A bon folder holds `heldout/` (a rollout run on the task's test split: one trace per (question, plan),
appended as it finishes), `judgments.jsonl` (one listwise judgment per (question, N), appended as it
finishes) and the results computed from both: `results.json`, `per_question.jsonl`, the plots and the
reports. An interrupted run resumes from what those files hold; a finished one recomputes its results from
them in seconds, so a larger `--n-questions` extends a run instead of starting over.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from ..llm import LLM
from ..mas.rollout import Progress, RunConfig, arollout
from ..mas.run_folder import run_questions
from ..mas.traces import Trace
from ..rm.model import RewardModel, rm_warnings
from ..tasks.base import Task
from .blind import ContentBlind
from .candidates import Case
from .cases import build_cases
from .compute import compute_results, per_question_rows
from .config import BonConfig
from .judge import JUDGMENTS_FILE, JudgeQueue, JudgeRecord, judge_evaluator
from .results import BonResults, RMInfo, RunInfo, write_results

HELDOUT_DIR = "heldout"


@dataclass
class BonProgress:
    """Best-of-N's counters. `stage` is what the report at hand is about: "rollout" (the held-out plans),
    "score" (the RM scores every plan) or "judge" (a judgment started or finished). The judge runs beside the
    rollout, each question judged once its plans are in, so "judge" and "rollout" reports interleave."""

    stage: str = "rollout"
    rollout: Progress | None = None
    judged: int = 0
    to_judge: int = 0


@dataclass
class BonResult:
    results: BonResults
    cases: list[Case] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def score_plans(
    rm: RewardModel, grouped: dict[str, list[Trace]]
) -> tuple[dict[str, list[float]], dict[str, float], dict[str, int]]:
    """The RM's reward for every plan, the seconds scoring each question took (rm's own cost), and the tokens
    a decoder RM read doing it (an LLM forward pass the policy's size: billed under `verify`; an encoder's
    are not an LLM call, 0)."""
    rewards: dict[str, list[float]] = {}
    rm_s: dict[str, float] = {}
    rm_tokens: dict[str, int] = {}
    for q, plans in grouped.items():
        start = time.perf_counter()
        texts = [t.plan if t.plan is not None else t.plan_text for t in plans]
        rewards[q] = rm.score(plans[0].question, texts)
        rm_s[q] = time.perf_counter() - start
        if rm.card.backbone_kind == "decoder":
            rm_tokens[q] = sum(rm.token_counts(plans[0].question, texts))
    return rewards, rm_s, rm_tokens


def shown(path: Path | None) -> str:
    """A path as the report shows it: relative to the working directory when inside it."""
    if path is None:
        return ""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def run_info(
    task: Task,
    rm: RewardModel,
    run_config: RunConfig,
    warnings: list[str],
    blind: ContentBlind | None,
    names: tuple[str, str] | None = None,
) -> RunInfo:
    """What the results say the run was; `names` are the orchestrator's and the agents' models as a person names
    them (`Backend.display_name`), written beside their identities."""
    card = rm.card
    named = {"model_name": names[0], "agent_model_name": names[1]} if names is not None else {}
    return RunInfo(
        task=task.name,
        model=run_config.model_id,
        agent_model=run_config.agent_model_id or run_config.model_id,
        **named,
        rm=RMInfo(path=shown(rm.path), backbone=card.backbone, tasks=card.tasks, weights_sha256=card.weights_sha256),
        rollout=run_config.model_dump(),
        warnings=warnings,
        prior=blind.prior.summary() if blind is not None else None,
        baselines=blind.info() if blind is not None else None,
    )


def _check(run_config: RunConfig) -> None:
    if run_config.split != "test":
        raise ConfigError("best-of-N runs on held-out questions: the rollout split must be 'test'")
    if run_config.execute != "all":
        raise ConfigError("the held-out rollout must execute every plan it samples")


def _judge_queue(
    llm: LLM, config: BonConfig, out: Path, state: BonProgress, report: Callable[[BonProgress], None]
) -> JudgeQueue | None:
    """The judge, reporting as it goes, ready to take questions as their plans come in; None when `config.judge`
    is off."""
    if not config.judge:
        return None

    def judge_progress(done: int, total: int) -> None:
        state.stage, state.judged, state.to_judge = "judge", done, total
        report(state)

    return JudgeQueue(judge_evaluator(llm, config), config, out / JUDGMENTS_FILE, judge_progress)


async def _heldout_plans(
    task: Task,
    llm: LLM,
    heldout: Path,
    run_config: RunConfig,
    agent_llm: LLM | None,
    parallel_questions: int,
    on_progress: Callable[[Progress], None],
    judge: JudgeQueue | None,
) -> dict[str, list[Trace]]:
    """The held-out rollout (resuming), each question handed to `judge` as soon as its N plans are in; every
    question's first N plans, refused when one has fewer."""
    rollout = await arollout(
        task,
        llm,
        heldout,
        run_config,
        agent_llm=agent_llm,
        parallel_questions=parallel_questions,
        on_progress=on_progress,
        on_question=(lambda q, plans: judge.submit(q.id, plans)) if judge is not None else None,
    )
    n = run_config.n_plans
    grouped = rollout.first_plans(n)
    short = {q: len(p) for q, p in grouped.items() if len(p) < n}
    if short:
        raise ConfigError(f"{len(short)} held-out questions have fewer than N={n} plans in {heldout}")
    return grouped


@dataclass
class HeldOut:
    """The held-out plans (each question's first N, in plan order) and the judge's records on them: all that
    selection reads besides the RM."""

    grouped: dict[str, list[Trace]]
    judgments: list[JudgeRecord]


async def aheldout(
    task: Task,
    llm: LLM,
    out: Path,
    run_config: RunConfig,
    config: BonConfig,
    *,
    agent_llm: LLM | None = None,
    parallel_questions: int = 2,
    on_progress: Callable[[BonProgress], None] | None = None,
) -> HeldOut:
    """Best-of-N's model work, which needs no RM: roll out N plans on the held-out questions (resuming) and judge
    each question as soon as its plans are in, so the judge shares the model's slots with the rollout."""
    _check(run_config)
    questions = run_questions(task, run_config.n_questions, "test", run_config.seed, run_config.skip_questions)
    state, report = BonProgress(), on_progress or (lambda s: None)

    def rollout_progress(p: Progress) -> None:
        state.stage, state.rollout = "rollout", p
        report(state)

    judge = _judge_queue(llm, config, out, state, report)
    if judge is not None:
        judge.expect([q.id for q in questions], run_config.n_plans)
    try:
        grouped = await _heldout_plans(
            task, llm, out / HELDOUT_DIR, run_config, agent_llm, parallel_questions, rollout_progress, judge
        )
        judgments = await judge.finish(grouped) if judge is not None else []
    finally:
        if judge is not None:
            judge.cancel()
    return HeldOut(grouped, judgments)


def fit_blind(prior_traces: Path | None, config: BonConfig, held_out: set[str]) -> ContentBlind | None:
    """The content-blind baselines fitted on the training traces (held-out questions never count toward them);
    None without traces."""
    if prior_traces is None:
        return None
    return ContentBlind.from_file(prior_traces, strength=config.prior_strength, exclude=held_out)


async def aselect(
    task: Task,
    rm: RewardModel,
    out: Path,
    run_config: RunConfig,
    config: BonConfig,
    held: HeldOut,
    *,
    blind: ContentBlind | None = None,
    names: tuple[str, str] | None = None,
    on_progress: Callable[[BonProgress], None] | None = None,
) -> BonResult:
    """Score every held-out plan with the RM and compute, then write, every method's results. `names`: the
    orchestrator's and agents' models as a person names them."""
    (on_progress or (lambda s: None))(BonProgress(stage="score"))
    # A thread: in the loop other work may still be sending requests on this event loop.
    rewards, rm_s, rm_tokens = await asyncio.to_thread(score_plans, rm, held.grouped)
    warnings = rm_warnings(rm, task, run_config.task)
    cases = build_cases(held.grouped, rewards, rm_s, blind, rm_tokens)
    meta = run_info(task, rm, run_config, warnings, blind, names)
    results = compute_results(cases, config, held.judgments, meta=meta)
    write_results(out, results, per_question_rows(cases, config, held.judgments))
    return BonResult(results, cases, warnings)


def model_names(llm: LLM, agent_llm: LLM | None = None) -> tuple[str, str]:
    """The orchestrator's and the agents' models as a person names them (`Backend.display_name`)."""
    return llm.backend.display_name, (agent_llm or llm).backend.display_name


async def abon(
    task: Task,
    llm: LLM,
    rm: RewardModel,
    out: Path,
    run_config: RunConfig,
    config: BonConfig,
    *,
    agent_llm: LLM | None = None,
    parallel_questions: int = 2,
    on_progress: Callable[[BonProgress], None] | None = None,
    prior_traces: Path | None = None,
) -> BonResult:
    """Roll out N plans (`run_config.n_plans`) on held-out questions (resuming), judge them, and compute every
    method's results (`aheldout`, then `aselect`).
    `llm` writes the plans (and judges); `agent_llm` (default `llm`) runs the sub-agents. `prior_traces` (the
    run's training traces) fits the content-blind baselines `prior`, `kind-prior` and `router`; without it they
    are absent."""
    _check(run_config)
    questions = run_questions(task, run_config.n_questions, "test", run_config.seed, run_config.skip_questions)
    blind = fit_blind(prior_traces, config, {q.id for q in questions})  # first: a missing file fails before any rollout
    held = await aheldout(
        task,
        llm,
        out,
        run_config,
        config,
        agent_llm=agent_llm,
        parallel_questions=parallel_questions,
        on_progress=on_progress,
    )
    names = model_names(llm, agent_llm)
    return await aselect(task, rm, out, run_config, config, held, blind=blind, names=names, on_progress=on_progress)
