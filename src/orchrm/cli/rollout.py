"""`orchrm rollout`: sample N plans per question, execute them, and write resumable traces."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from .options import (
    AgentBackend,
    AgentBaseUrl,
    AgentContext,
    AgentMaxRounds,
    AgentMaxSamples,
    AgentMaxTokens,
    AgentModel,
    ApiKeyEnv,
    Checkpoint,
    REQUEST_TIMEOUT_S,
    RUN,
    Concurrency,
    Constrained,
    Degree,
    Json,
    LogEvery,
    AGENTS,
    MODELS,
    PLANS,
    OrchestratorAdapter,
    OrchestratorBackend,
    OrchestratorBaseUrl,
    OrchestratorModel,
    ParallelQuestions,
    PlanMaxTokens,
    PromptExamples,
    Quiet,
    Seed,
    TaskName,
    Temperature,
)
from ..errors import ConfigError
from ..mas.rollout import Progress as Counters
from ..mas.rollout import RunConfig, agent_fields, arollout
from ..tasks import load_task
from .llms import checkpoint_label, run_llms
from .progress import DEFAULT_INTERVAL_S, Reporter, choose_mode, result_console, rollout_info


def _check(settings: dict[str, object]) -> None:
    """A bad option is one line naming it, before any model loads."""
    try:
        RunConfig.model_validate(settings)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}") from None


def rollout(
    task: TaskName,
    out: Annotated[Path, typer.Option(help="Run folder (created, or resumed when it exists).")],
    n_questions: Annotated[int, typer.Option(help="Questions to draw from the split.")] = RUN.n_questions,
    n_plans: Annotated[int, typer.Option(help="Plans sampled per question.")] = RUN.n_plans,
    split: Annotated[str, typer.Option(help="train or test (splits are by question).")] = RUN.split,
    seed: Seed = RUN.seed,
    execute: Annotated[str, typer.Option(help="all: execute every valid plan; none: only sample plans.")] = RUN.execute,
    degree: Degree = RUN.degree,
    temperature: Temperature = RUN.temperature,
    top_p: Annotated[float, typer.Option(help="Orchestrator nucleus sampling mass.", rich_help_panel=PLANS)] = RUN.top_p,
    plan_max_tokens: PlanMaxTokens = RUN.plan_max_tokens,
    constrained: Constrained = RUN.constrained,
    checkpoint: Checkpoint = None,
    prompt_examples: PromptExamples = RUN.prompt_examples,
    agent_max_tokens: AgentMaxTokens = RUN.agent_max_tokens,
    agent_max_samples: AgentMaxSamples = RUN.agent_max_samples,
    agent_max_rounds: AgentMaxRounds = RUN.agent_max_rounds,
    agent_context: AgentContext = RUN.agent_context,
    agent_timeout: Annotated[float, typer.Option(help="Seconds one sub-agent may run.", rich_help_panel=AGENTS)] = RUN.agent_timeout_s,
    parallel_questions: ParallelQuestions = 2,
    backend: OrchestratorBackend = RUN.backend,
    model: OrchestratorModel = None,
    base_url: OrchestratorBaseUrl = None,
    orchestrator_adapter: OrchestratorAdapter = None,
    agent_backend: AgentBackend = None,
    agent_model: AgentModel = None,
    agent_base_url: AgentBaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    concurrency: Concurrency = None,
    timeout: Annotated[float, typer.Option(help="Per-request timeout in seconds (long: a busy CPU is slow).", rich_help_panel=MODELS)] = REQUEST_TIMEOUT_S,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache.", rich_help_panel=MODELS)] = False,
    quiet: Quiet = False,
    as_json: Json = False,
    log_every: LogEvery = DEFAULT_INTERVAL_S,
) -> None:
    """Sample plans for a task's questions, execute them, and append one trace per (question, plan) to OUT."""
    settings = dict(
        task=task, split=split, n_questions=n_questions, n_plans=n_plans, seed=seed, execute=execute, backend=backend,
        degree=degree, temperature=temperature, top_p=top_p, plan_max_tokens=plan_max_tokens, constrained=constrained,
        checkpoint=checkpoint or RUN.checkpoint, prompt_examples=prompt_examples, agent_max_tokens=agent_max_tokens,
        agent_timeout_s=agent_timeout,
        agent_max_samples=agent_max_samples, agent_max_rounds=agent_max_rounds, agent_context=agent_context,
    )
    _check(settings)
    the_task = load_task(task)
    with run_llms(
        backend, model, base_url, agent_backend=agent_backend, agent_model=agent_model, agent_base_url=agent_base_url,
        cache=not no_cache, api_key_env=api_key_env, concurrency=concurrency, timeout_s=timeout,
        orchestrator_adapter=orchestrator_adapter,
    ) as (llm, agent_llm):
        settings["checkpoint"] = checkpoint_label(llm, checkpoint)
        config = RunConfig.model_validate({**settings, "model_id": llm.backend.model_id, **agent_fields(llm, agent_llm)})
        with Reporter(choose_mode(quiet=quiet, as_json=as_json), interval_s=log_every) as progress:
            result = asyncio.run(arollout(the_task, llm, out, config, agent_llm=agent_llm, parallel_questions=parallel_questions,
                                          on_progress=lambda p: _report(progress, p)))  # fmt: skip
    _print_summary(out, result.progress, as_json)


def _report(progress: Reporter, p: Counters) -> None:
    progress.update("rollout plans", done=p.plans_done, total=p.plans_total, tokens=p.tokens, info=rollout_info(p))


def _print_summary(out: Path, result: Counters, as_json: bool) -> None:
    """The run's counts; accuracy is correct traces over all traces (an invalid or failed plan is wrong)."""
    accuracy = result.correct / result.plans_done if result.plans_done else None
    summary = dict(out=str(out), traces=result.plans_done, resumed=result.resumed, valid_plans=result.plans_valid,
                   correct=result.correct, accuracy=accuracy, tokens=result.tokens)  # fmt: skip
    if as_json:
        print(json.dumps(summary))
        return
    share = f" ({accuracy:.1%})" if accuracy is not None else ""
    result_console(as_json).print(
        f"[bold]{out}[/]: {result.plans_done} traces ({result.resumed} from before), "
        f"{result.plans_valid} valid plans, {result.correct} correct{share}, {result.tokens:,} tokens"
    )
