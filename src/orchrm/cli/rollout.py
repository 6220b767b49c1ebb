"""`orchrm rollout`: sample N plans per question, execute them, and write resumable traces."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from pydantic import ValidationError

from .options import (
    AgentMaxRounds,
    AgentMaxSamples,
    AgentMaxTokens,
    ApiKeyEnv,
    Backend,
    BaseUrl,
    Concurrency,
    Constrained,
    Degree,
    Model,
    ParallelQuestions,
    PlanMaxTokens,
    Seed,
    TaskName,
    Temperature,
)
from ..errors import ConfigError
from ..llm import open_llm
from ..mas.rollout import Progress as Counters
from ..mas.rollout import RunConfig, arollout
from ..tasks import load_task


def rollout(
    task: TaskName,
    out: Annotated[Path, typer.Option(help="Run folder (created, or resumed when it exists).")],
    n_questions: Annotated[int, typer.Option(help="Questions to draw from the split.")] = 10,
    n_plans: Annotated[int, typer.Option(help="Plans sampled per question.")] = 4,
    split: Annotated[str, typer.Option(help="train or test (splits are by question).")] = "train",
    seed: Seed = 0,
    execute: Annotated[str, typer.Option(help="all: execute every valid plan; none: only sample plans.")] = "all",
    degree: Degree = "dag",
    temperature: Temperature = 0.8,
    top_p: Annotated[float, typer.Option(help="Orchestrator nucleus sampling mass.")] = 0.95,
    plan_max_tokens: PlanMaxTokens = 400,
    constrained: Constrained = False,
    checkpoint: Annotated[str, typer.Option(help="Free label of the orchestrator checkpoint (e.g. base).")] = "base",
    agent_max_tokens: AgentMaxTokens = 384,
    agent_max_samples: AgentMaxSamples = None,
    agent_max_rounds: AgentMaxRounds = None,
    agent_timeout: Annotated[float, typer.Option(help="Seconds one sub-agent may run.")] = 900.0,
    parallel_questions: ParallelQuestions = 2,
    backend: Backend = "local",
    model: Model = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    concurrency: Concurrency = None,
    timeout: Annotated[float, typer.Option(help="Per-request timeout in seconds (long: a busy CPU is slow).")] = 3600.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache.")] = False,
) -> None:
    """Sample plans for a task's questions, execute them, and append one trace per (question, plan) to OUT."""
    settings = dict(
        task=task, split=split, n_questions=n_questions, n_plans=n_plans, seed=seed, execute=execute, backend=backend,
        degree=degree, temperature=temperature, top_p=top_p, plan_max_tokens=plan_max_tokens, constrained=constrained,
        checkpoint=checkpoint, agent_max_tokens=agent_max_tokens, agent_timeout_s=agent_timeout,
        agent_max_samples=agent_max_samples, agent_max_rounds=agent_max_rounds,
    )
    try:
        RunConfig.model_validate(settings)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}") from None
    the_task = load_task(task)
    console = Console(highlight=False)
    with open_llm(
        backend, cache=not no_cache, model=model, base_url=base_url, api_key_env=api_key_env, concurrency=concurrency,
        timeout_s=timeout,
    ) as llm:
        config = RunConfig.model_validate({**settings, "model_id": llm.backend.model_id})
        columns = (
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("questions · {task.fields[plans]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        )
        with Progress(*columns, console=console, transient=False) as bar:
            job = bar.add_task("rollout", total=n_questions, plans="")

            def update(p: Counters) -> None:
                plans = f"plans {p.plans_done}/{p.plans_total} ({p.plans_valid} valid, {p.correct} correct) · {p.tokens:,} tok"
                bar.update(job, completed=p.questions_done, plans=plans)

            result = asyncio.run(arollout(the_task, llm, out, config, parallel_questions=parallel_questions, on_progress=update))
        console.print(
            f"[bold]{out}[/]: {result.plans_done} traces ({result.resumed} from before), "
            f"{result.plans_valid} valid plans, {result.correct} correct, {result.tokens:,} tokens"
        )
