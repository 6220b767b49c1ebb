"""`orchrm counterfactual`: edit a run's executed plans, execute the edited plans, record each edit beside its trace."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from ..errors import ConfigError
from ..llm import open_llm
from ..pairs.counterfactual import (
    CounterfactualConfig,
    CounterfactualProgress,
    acollect_counterfactuals,
)
from ..pairs.edit_kinds import EDIT_KINDS
from . import options as opt
from .progress import Reporter, result_console
from .say import say, styled

#: The option defaults are `CounterfactualConfig`'s, read from it so the two cannot drift.
DEFAULTS = CounterfactualConfig()


def _config(kinds: list[str] | None, **settings: object) -> CounterfactualConfig:
    """The settings, or one line naming the bad option, before any model loads."""
    chosen = [k.strip() for spec in kinds or [] for k in spec.split(",") if k.strip()]
    unknown = sorted(set(chosen) - set(EDIT_KINDS))
    if unknown:
        raise ConfigError(f"--kinds: unknown edit kind {', '.join(unknown)}", hint=f"use {', '.join(EDIT_KINDS)}")
    return opt.checked(CounterfactualConfig, {**settings, **({"kinds": chosen} if chosen else {})})


def agent_target(models: opt.ModelOptions) -> tuple[str, str | None, str | None]:
    """The sub-agents' (backend, model, base URL), resolved from rollout's options as `open_agent_llm` resolves
    them: an agent option left out is the orchestrator's, so one model stays the default."""
    backend, model, base_url = models.backend, models.model, models.base_url
    if models.agent_backend is None and models.agent_model is None and models.agent_base_url is None:
        return backend, model, base_url
    kind = models.agent_backend or backend
    url = models.agent_base_url if models.agent_base_url is not None or kind != backend else base_url
    agent_model = models.agent_model
    if agent_model is None and (kind, url) == (backend, base_url):
        agent_model = model
    return kind, agent_model, url


@opt.with_models
@opt.with_progress
def counterfactual(
    run: Annotated[Path, typer.Option(help="Run folder from `orchrm rollout` whose executed plans are edited.")],
    out: Annotated[Path, typer.Option(help="Counterfactual folder (created, or resumed when it exists).")],
    edits_per_plan: Annotated[
        int, typer.Option(help="Edits per source plan (each run on the agent model).")
    ] = DEFAULTS.edits_per_plan,
    kinds: Annotated[
        list[str] | None,
        typer.Option(help=f"Edit kinds, repeatable or comma-separated (default all): {', '.join(EDIT_KINDS)}."),
    ] = None,
    max_plans: Annotated[
        int | None, typer.Option(help="Source plans edited at most, in run order (default all).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the edits chosen.")] = DEFAULTS.seed,
    parallel: Annotated[int, typer.Option(help="Edited plans executing at once.")] = 4,
    *,
    models: opt.ModelOptions,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache.")] = False,
    reporting: opt.ProgressOptions,
) -> None:
    """Edit a run's executed plans, execute the edited plans, and record each edit beside its trace in OUT.

    Only the sub-agents run, on the model named as rollout names it (--agent-*, else --backend, --model,
    --base-url); it must be the one the run's sub-agents ran on. Resumable: a rerun executes only edits
    without a trace. Pair the result with `orchrm pairs RUN --counterfactual OUT`.
    """
    config = _config(kinds, edits_per_plan=edits_per_plan, max_plans=max_plans, seed=seed)
    if parallel < 1:
        raise ConfigError(f"--parallel: must be at least 1, got {parallel}")
    # Only the sub-agents run: the model the run's agents ran on (rollout's options name it the same way).
    kind, agent, url = agent_target(models)
    llm = open_llm(
        kind,
        model=agent,
        base_url=url,
        cache=not no_cache,
        api_key_env=models.api_key_env,
        concurrency=models.concurrency,
        timeout_s=models.timeout,
    )
    try:
        with reporting.reporter() as progress:
            result = asyncio.run(
                acollect_counterfactuals(
                    run, out, llm, config, parallel=parallel, on_progress=lambda p: _report(progress, p)
                )
            )
    finally:
        llm.close()
    _print_summary(out, result, reporting.as_json)


def _report(progress: Reporter, p: CounterfactualProgress) -> None:
    info = f"{p.plans} plans · {p.invalid} invalid · {p.executed} executed · {p.flipped} outcome changed"
    progress.update(
        "counterfactual edits", done=p.resumed + p.edits_done, total=p.edits_total, tokens=p.tokens, info=info
    )


def _print_summary(out: Path, p: CounterfactualProgress, as_json: bool) -> None:
    summary = {
        "out": str(out),
        "plans": p.plans,
        "edits": p.edits_total,
        "done": p.edits_done,
        "resumed": p.resumed,
        "invalid": p.invalid,
        "executed": p.executed,
        "outcome_changed": p.flipped,
        "tokens": p.tokens,
        "skipped_plans": p.skipped,
    }
    if as_json:
        print(json.dumps(summary))
        return
    console = result_console(as_json)
    console.print(
        styled(
            (out, "bold"),
            f": {p.edits_total} edits of {p.plans} plans ({p.resumed} from before); this sitting "
            f"{p.edits_done}: {p.invalid} invalid, {p.executed} executed, "
            f"{p.flipped} changed the outcome, {p.tokens:,} tokens",
        )
    )
    for reason, n in sorted(p.skipped.items()):
        say(console, f"plans not edited ({reason}): {n}", "dim")
