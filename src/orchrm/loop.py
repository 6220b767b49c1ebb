"""The main job, end to end: rollouts on training questions -> evidence labels -> pairs -> a trained RM ->
best-of-N on held-out questions against every baseline -> the report.

The held-out rollout and its listwise judge need no RM, so they run from the start beside the training rollout
and the RM's training, sharing the model's slots; the RM then scores the held-out plans and every method is
compared (`bon.run.aheldout`, then `aselect`). Each stage writes into its own subfolder of one output folder and
resumes from it: the rollouts append
traces, the pairs are rebuilt from the traces (seconds), the RM is retrained only when its pairs changed
(its card records their hash), and best-of-N resumes its own rollout and judgments. With the response cache,
a second run of the same command replays every LLM call and finishes in minutes.

The loop folder is declared here: `loop.json` (its `LoopConfig`, read back by `read_loop_config`) and the
stage folders `train/`, `pairs/`, `rm/`, `bon/`. A rerun into the same folder is checked against `loop.json`
before anything is touched (`loop_differences`): it may ask for more questions or plans (the rollouts grow, as a
rollout's own resume does), another RM (retrained) or other best-of-N settings (selected and judged again), and
nothing else; any other change is refused in one line naming it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from .bon.config import BonConfig
from .bon.report import write_reports
from .bon.run import BonProgress, BonResult, aheldout, aselect, fit_blind, model_names
from .llm import LLM
from .mas.rollout import (
    Progress,
    RolloutResult,
    RolloutSettings,
    RunConfig,
    agent_fields,
    arollout,
    ensure_models_reachable,
)
from .mas.run_folder import read_settings, settle_run_file
from .pairs.builder import PairConfig, PairSet, PairStats, build_pairs
from .pairs.rows import write_pairs_dir
from .profiles import BASE
from .rm.config import RMConfig
from .rm.model import RewardModel
from .rm.reuse import current_rm
from .rm.train import data_hash, train_reward_model
from .side_by_side import side_by_side
from .tasks.base import Task

__all__ = [
    "BON_DIR",
    "LOOP_FILE",
    "PAIRS_DIR",
    "RM_DIR",
    "TRAIN_DIR",
    "LoopConfig",
    "LoopEvent",
    "LoopResult",
    "arun_loop",
    "loop_differences",
    "read_loop_config",
]

LOOP_FILE = "loop.json"
TRAIN_DIR, PAIRS_DIR, RM_DIR, BON_DIR = "train", "pairs", "rm", "bon"
#: What a rerun into the same loop folder may change: the counts (its rollouts grow), how many questions run at
#: once, the RM (retrained), best-of-N's settings (selected and judged again) and the profile's name (a label:
#: the values decide).
RERUN_MAY_CHANGE = frozenset(
    {"train_questions", "test_questions", "n_plans", "parallel_questions", "rm", "bon", "profile"}
)


class LoopConfig(BaseModel):
    """What the whole loop runs with. Its settings' defaults are those every verb shares (`RolloutSettings`,
    `RMConfig`, `BonConfig`); `orchrm demo` lays the `demo` profile over them (`profiled(LoopConfig, "demo")`).

    `rollout` holds how plans are sampled and executed, in the training rollouts and in best-of-N alike, and
    `n_plans` how many per question, in both (the one field: `run_config` hands it to each `RunConfig`). Older
    `loop.json` files still load: one holding the rollout settings at the top level (as does
    `LoopConfig(temperature=...)`) has them lifted into `rollout`, and its plans per question under `n` (and a
    copy in `bon.n`) are read as `n_plans`.
    """

    # A pool where the right plan depends on the question: retrieval questions need search agents (the names
    # are invented), arithmetic chains need a python agent; one RM has to route per question.
    task: str = Field("mix:world_qa,chain_sum", description="The task spec of the training and held-out questions.")
    train_questions: int = Field(20, ge=1, description="Training questions (rollouts -> pairs -> RM).")
    test_questions: int = Field(16, ge=1, description="Held-out questions for best-of-N.")
    n_plans: int = Field(
        RunConfig.model_fields["n_plans"].default,
        ge=1,
        description="Plans sampled per question, in the training rollouts and in best-of-N.",
    )
    parallel_questions: int = Field(2, ge=1, description="Questions in flight at once.")
    rollout: RolloutSettings = Field(
        default_factory=RolloutSettings,
        description="How plans are sampled and executed, in the training rollouts and in best-of-N alike.",
    )
    rm: RMConfig = Field(default_factory=RMConfig)
    bon: BonConfig = Field(default_factory=BonConfig)
    profile: str = Field(BASE, description="The named profile its settings were laid over (`orchrm.profiles`).")

    @model_validator(mode="before")
    @classmethod
    def _nested(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "n" in data:  # a loop.json from before `n_plans`
            data = {**{k: v for k, v in data.items() if k != "n"}, "n_plans": data.get("n_plans", data["n"])}
        flat = {k: data[k] for k in RolloutSettings.model_fields if k in data}
        given = data.get("rollout")
        if not flat:
            return data
        nested = given.model_dump() if isinstance(given, RolloutSettings) else dict(given or {})
        return {**{k: v for k, v in data.items() if k not in flat}, "rollout": {**nested, **flat}}

    @property
    def seed(self) -> int:
        """The loop's seed: the rollouts' (questions, plans, sub-agents), and the pairs' split."""
        return self.rollout.seed

    def run_config(
        self,
        split: str,
        model_id: str,
        agent_backend: str = "",
        agent_model_id: str = "",
        *,
        backend: str = "local",
        model_name: str = "",
        agent_model_name: str = "",
    ) -> RunConfig:
        """The run folder settings of the loop's rollout of `split`: its rollout settings, task, counts, models."""
        questions = self.train_questions if split == "train" else self.test_questions
        return RunConfig(
            **self.rollout.model_dump(),
            task=self.task,
            split=split,
            n_questions=questions,
            n_plans=self.n_plans,
            execute="all",
            backend=backend,
            model_id=model_id,
            agent_backend=agent_backend,
            agent_model_id=agent_model_id,
            model_name=model_name,
            agent_model_name=agent_model_name,
            profile=self.profile,
        )


def read_loop_config(folder: Path) -> LoopConfig:
    """The `LoopConfig` a loop folder was made with: the one reader of its `loop.json`."""
    return read_settings(folder, LoopConfig, "pass a folder made by `orchrm demo`", name=LOOP_FILE)


def loop_differences(new: LoopConfig, old: LoopConfig) -> list[str]:
    """The settings a rerun cannot honour that differ, as `name: old -> new` (a nested one dotted:
    `rollout.temperature`); those in `RERUN_MAY_CHANGE` never count."""
    return _changed(old.model_dump(exclude=RERUN_MAY_CHANGE), new.model_dump(exclude=RERUN_MAY_CHANGE))


def _changed(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for k in dict.fromkeys([*old, *new]):
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _changed(a, b, f"{prefix}{k}.")
        elif a != b:
            out.append(f"{prefix}{k}: {a!r} -> {b!r}")
    return out


@dataclass
class LoopEvent:
    """A progress report: which stage, and that stage's counters."""

    stage: str  # rollout, pairs, train, save (the trained RM), bon, report
    rollout: Progress | None = None
    bon: BonProgress | None = None
    message: str = ""


@dataclass
class LoopResult:
    pair_stats: PairStats
    rm_metrics: dict[str, Any]
    rm_trained: bool
    bon: BonResult
    reports: dict[str, Path]


async def arun_loop(
    task: Task,
    llm: LLM,
    out: Path,
    config: LoopConfig,
    *,
    agent_llm: LLM | None = None,
    on_event: Callable[[LoopEvent], None] | None = None,
    rm_callbacks: Callable[[], list[Any]] | None = None,
    rm_device: str | None = None,
) -> LoopResult:
    """The whole loop; `llm` writes plans (and judges), `agent_llm` (default `llm`) runs the sub-agents.
    `rm_device` (auto | cpu | cuda, as `--device`) is where the RM trains and scores; None: `config.rm.device`.
    `rm_callbacks()` makes callbacks for the RM's trainer (transformers `TrainerCallback`s: a progress reporter,
    say), called when the training starts, so transformers is imported only by a loop that trains."""
    emit = on_event or (lambda e: None)
    await ensure_models_reachable(llm, agent_llm)
    settle_run_file(out, config, loop_differences, name=LOOP_FILE, what="a loop", kind="loop")

    def run_config(split: str) -> RunConfig:
        return config.run_config(split, llm.backend.model_id, backend=llm.backend.kind, **agent_fields(llm, agent_llm))

    # The held-out rollout and its judge need no RM: they run beside the training rollout and the RM's training,
    # sharing the model's slots, instead of waiting for them.
    test_config = run_config("test")

    def bon_events(p: BonProgress) -> None:  # both halves of best-of-N report as one stage
        emit(LoopEvent("bon", bon=p))

    held_out = aheldout(
        task,
        llm,
        out / BON_DIR,
        test_config,
        config.bon,
        agent_llm=agent_llm,
        parallel_questions=config.parallel_questions,
        on_progress=bon_events,
    )
    training = _training(task, llm, out, config, run_config("train"), agent_llm, emit, rm_device, rm_callbacks)
    trained, held = await side_by_side(training, held_out)

    bon_dir = out / BON_DIR
    blind = fit_blind(trained.rollout.traces_path, config.bon, set(held.grouped))
    names = model_names(llm, agent_llm)
    bon = await aselect(
        task, trained.rm, bon_dir, test_config, config.bon, held, blind=blind, names=names, on_progress=bon_events
    )
    emit(LoopEvent("report"))
    reports = write_reports(bon.results, bon_dir)
    return LoopResult(trained.pairs.stats, trained.rm.card.metrics, trained.trained, bon, reports)


@dataclass
class _Trained:
    rollout: RolloutResult
    pairs: PairSet
    rm: RewardModel
    trained: bool  # trained now, not reused


async def _training(
    task: Task,
    llm: LLM,
    out: Path,
    config: LoopConfig,
    train_config: RunConfig,
    agent_llm: LLM | None,
    emit: Callable[[LoopEvent], None],
    rm_device: str | None,
    rm_callbacks: Callable[[], list[Any]] | None,
) -> _Trained:
    """The training rollout, its pairs and the RM trained on them (or the saved one, when current)."""
    rollout = await arollout(
        task,
        llm,
        out / TRAIN_DIR,
        train_config,
        agent_llm=agent_llm,
        parallel_questions=config.parallel_questions,
        on_progress=lambda p: emit(LoopEvent("rollout", rollout=p)),
    )
    emit(LoopEvent("pairs"))
    pairs = build_pairs(rollout.traces(), PairConfig(seed=config.seed))
    write_pairs_dir(out / PAIRS_DIR, pairs.train, pairs.val, pairs.stats)
    # A thread: the held-out requests go on being sent while the RM trains.
    rm, trained = await asyncio.to_thread(
        _reward_model, pairs, out / RM_DIR, config.rm, emit, rm_device=rm_device, rm_callbacks=rm_callbacks
    )
    return _Trained(rollout, pairs, rm, trained)


def _reward_model(
    pairs: PairSet,
    rm_dir: Path,
    rm_config: RMConfig,
    emit: Callable[[LoopEvent], None],
    *,
    rm_device: str | None,
    rm_callbacks: Callable[[], list[Any]] | None,
) -> tuple[RewardModel, bool]:
    """The RM in `rm_dir` when it was trained on these pairs with these settings, else one trained now and saved
    there; loaded on `rm_device`, and whether it was trained now."""
    rm = current_rm(rm_dir, data_hash(pairs.train), rm_config) if pairs.train else None
    trained = rm is None
    if rm is None:
        emit(LoopEvent("train", message=f"{len(pairs.train)} train / {len(pairs.val)} val pairs"))
        result = train_reward_model(
            pairs.train,
            pairs.val,
            rm_config if rm_device is None else rm_config.model_copy(update={"device": rm_device}),
            pair_stats=json.loads(pairs.stats.model_dump_json()),
            progress=False,
            callbacks=rm_callbacks() if rm_callbacks else None,
        )
        emit(LoopEvent("save", message=str(rm_dir)))
        result.model.save(rm_dir)
        rm = RewardModel.load(rm_dir)
    if rm_device is not None and rm_device != "cpu":
        rm = RewardModel.load(rm_dir, device=rm_device)  # a saved RM loads on the CPU
    return rm, trained
