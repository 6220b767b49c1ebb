"""`orchrm rollout`: sample N plans per question, execute them, and write resumable traces."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from ..mas.rollout import Progress as Counters
from ..mas.rollout import RolloutSettings, RunConfig, agent_fields, arollout
from ..tasks import load_task
from . import options as opt
from .llms import checkpoint_label, open_models
from .progress import Reporter, result_console, rollout_info
from .say import styled


@opt.with_models
@opt.with_progress
@opt.options_from(RolloutSettings)
def rollout(
    task: opt.TaskName,
    out: Annotated[Path, typer.Option(help="Run folder (created, or resumed when it exists).")],
    *,
    n_questions: int = opt.field_option(RunConfig, "n_questions"),
    skip_questions: int = opt.field_option(RunConfig, "skip_questions"),
    n_plans: int = opt.field_option(RunConfig, "n_plans"),
    split: str = opt.field_option(RunConfig, "split"),
    execute: str = opt.field_option(RunConfig, "execute"),
    profile: str = opt.profile_option(),
    settings: RolloutSettings,
    checkpoint: opt.Checkpoint = None,
    orchestrator_adapter: opt.OrchestratorAdapter = None,
    parallel_questions: opt.ParallelQuestions = 2,
    models: opt.ModelOptions,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither read nor write the response cache.", rich_help_panel=opt.MODELS)
    ] = False,
    reporting: opt.ProgressOptions,
) -> None:
    """Sample plans for a task's questions, execute them, and append one trace per (question, plan) to OUT."""
    run = dict(
        settings.model_dump(),
        task=task,
        split=split,
        n_questions=n_questions,
        skip_questions=skip_questions,
        n_plans=n_plans,
        execute=execute,
        backend=models.backend,
        checkpoint=checkpoint or opt.RUN.checkpoint,
        profile=profile,
    )
    opt.checked(RunConfig, run)
    the_task = load_task(task)
    with open_models(models, cache=not no_cache, orchestrator_adapter=orchestrator_adapter) as (llm, agent_llm):
        run["checkpoint"] = checkpoint_label(llm, checkpoint)
        config = RunConfig.model_validate({**run, "model_id": llm.backend.model_id, **agent_fields(llm, agent_llm)})
        with reporting.reporter() as progress:
            result = asyncio.run(
                arollout(
                    the_task,
                    llm,
                    out,
                    config,
                    agent_llm=agent_llm,
                    parallel_questions=parallel_questions,
                    on_progress=lambda p: _report(progress, p),
                )
            )
    _print_summary(out, result.progress, reporting.as_json)


def _report(progress: Reporter, p: Counters) -> None:
    progress.update("rollout plans", done=p.plans_done, total=p.plans_total, tokens=p.tokens, info=rollout_info(p))


def _print_summary(out: Path, result: Counters, as_json: bool) -> None:
    """The run's counts; accuracy is correct traces over all traces (an invalid or failed plan is wrong)."""
    accuracy = result.correct / result.plans_done if result.plans_done else None
    summary = dict(
        out=str(out),
        traces=result.plans_done,
        resumed=result.resumed,
        valid_plans=result.plans_valid,
        correct=result.correct,
        accuracy=accuracy,
        tokens=result.tokens,
    )
    if as_json:
        print(json.dumps(summary))
        return
    share = f" ({accuracy:.1%})" if accuracy is not None else ""
    result_console(as_json).print(
        styled(
            (out, "bold"),
            f": {result.plans_done} traces ({result.resumed} from before), "
            f"{result.plans_valid} valid plans, {result.correct} correct{share}, {result.tokens:,} tokens",
        )
    )
