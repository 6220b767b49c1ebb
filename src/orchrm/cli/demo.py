"""`orchrm demo`: the main job — the whole loop, on the embedded model (offline) or any served one, with a
comparison table."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from ..bon.config import BonConfig, resolve_judge
from ..llm import DEFAULT_MODEL, LLM, TokenLedger, described
from ..loop import LoopConfig, LoopEvent, LoopResult, arun_loop
from ..mas.run_config import RolloutSettings
from ..rm.config import RMConfig
from ..rm.device import DEVICE_HELP, Device, resolve_device
from ..tasks import load_task
from . import options as opt
from .bon import report_bon, results_tables
from .llms import open_models
from .progress import (
    Reporter,
    Tokens,
    category_meter,
    result_console,
    rollout_info,
)
from .render import usage_table
from .reward_model import _rm_info as rm_info  # the RM steps line: loss, held-out accuracy
from .say import say, styled, warn
from .trainer_progress import trainer_progress

if TYPE_CHECKING:
    from ..tasks import Task

#: The profile the demo runs with unless told otherwise: its settings fit the loop to 2 CPU cores.
DEMO = "demo"


def models_line(llm: LLM, agent_llm: LLM) -> str:
    """The opened models by name with their identities beside (`qwen2.5-coder-0.5b (gguf:<sha256>)`)."""
    plans, agents = described(llm.backend), described(agent_llm.backend)
    return (
        f"orchestrator and sub-agents: {plans}" if plans == agents else f"orchestrator: {plans}; sub-agents: {agents}"
    )


def _models(model: str, agent_model: str | None) -> str:
    return f"model {model}" if agent_model in (None, model) else f"orchestrator {model}, sub-agents {agent_model}"


@opt.with_models
@opt.with_progress
@opt.options_from(RolloutSettings, into="rollout")
def demo(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option(help="Output folder (resumed when it exists).")] = Path("runs/demo"),
    *,
    task: opt.TaskName = LoopConfig.model_fields["task"].default,
    train_questions: int = opt.field_option(LoopConfig, "train_questions"),
    test_questions: int = opt.field_option(LoopConfig, "test_questions"),
    n_plans: int = opt.field_option(LoopConfig, "n_plans"),
    n: int | None = opt.old_flag("--n", "--n-plans"),
    profile: str = opt.profile_option(DEMO),
    rollout: RolloutSettings,
    epochs: int = opt.field_option(RMConfig, "epochs"),
    judge: bool | None = opt.judge_option(),
    judge_max_steps: int = opt.field_option(BonConfig, "judge_max_steps", "--judge-steps"),
    judge_max_tokens: int = opt.field_option(BonConfig, "judge_max_tokens"),
    parallel_questions: int = opt.field_option(LoopConfig, "parallel_questions", panel=opt.MODELS),
    device: Annotated[Device, typer.Option(help=DEVICE_HELP, rich_help_panel=opt.MODELS)] = "auto",
    models: opt.ModelOptions,
    reporting: opt.ProgressOptions,
) -> None:
    """Rollouts -> evidence -> pairs -> RM training -> best-of-N against every baseline -> report."""
    n_plans = opt.renamed(ctx, n_plans, n, "n_plans", "--n")
    the_task = load_task(task)
    judge = resolve_judge(judge, the_task.agent_types)
    config = opt.checked(
        LoopConfig,
        dict(
            task=task,
            train_questions=train_questions,
            test_questions=test_questions,
            n_plans=n_plans,
            rollout=rollout,
            parallel_questions=parallel_questions,
            rm={"epochs": epochs},
            profile=profile,
            bon={"judge": judge, "judge_max_steps": judge_max_steps, "judge_max_tokens": judge_max_tokens},
        ),
        {"judge_max_steps": "--judge-steps"},
    )
    if device == "cuda":
        resolve_device(device)  # no GPU: one line before any model loads ("auto" resolves where the RM loads)
    console = result_console(reporting.as_json)
    if models.backend == "local" and models.model is None:
        models = models.model_copy(update={"model": DEFAULT_MODEL})
    where = "offline" if models.backend == "local" and models.agent_backend in (None, "local") else "served"
    console.print(_header(config, models, where, out))
    start = time.perf_counter()
    with reporting.reporter() as progress:
        result, ledger = _run(progress, the_task, out, config, models, where=where, device=device)
    wall_s = time.perf_counter() - start
    if reporting.as_json:
        print(json.dumps(_summary(out, wall_s, result, ledger)))
    else:
        _print_result(console, result, ledger, wall_s)


def _header(config: LoopConfig, models: opt.ModelOptions, where: str, out: Path) -> Text:
    """The demo's first line: what it runs, on which models, into which folder."""
    return styled(
        ("orchrm demo", "bold"),
        f": {config.task}, {config.train_questions} training + {config.test_questions} held-out questions, "
        f"N={config.n_plans} plans each, {_models(models.model or models.backend, models.agent_model)} ({where})"
        f"{'' if config.bon.judge else ', no listwise judge'} -> {out}",
    )


def _run(
    progress: Reporter,
    task: Task,
    out: Path,
    config: LoopConfig,
    models: opt.ModelOptions,
    *,
    where: str,
    device: Device,
) -> tuple[LoopResult, TokenLedger]:
    """The loop on freshly opened models, reporting to `progress`; its result and the orchestrator's ledger."""
    progress.note(f"opening the {where} models")  # an embedded model starts its server: seconds
    with open_models(models) as (llm, agent_llm):
        progress.note(models_line(llm, agent_llm))
        # The RM's steps line counts the trainer's own non-padding tokens; the judge's reads the `verify` calls.
        result = asyncio.run(
            arun_loop(
                task,
                llm,
                out,
                config,
                agent_llm=agent_llm,
                rm_device=device,
                rm_callbacks=lambda: [trainer_progress(progress, "training RM", rm_info)],
                on_event=_reporting(progress, category_meter(llm.ledger, "verify")),
            )
        )
        return result, llm.ledger


#: What the loop is doing at the events that carry no counters (the RM's steps are its trainer's callback's).
NOTES = {
    "pairs": "building pairs from the training traces",
    "train": "training the reward model ({message})",
    "save": "saving the reward model to {message}",
    "report": "writing the report",
}


def _reporting(progress: Reporter, judge_tokens: Tokens) -> Callable[[LoopEvent], None]:
    """The loop's events as progress lines: rollout counts, what each step between them does, best-of-N (the
    judge's tokens read from `judge_tokens`)."""

    def on_event(e: LoopEvent) -> None:
        if e.stage == "rollout" and e.rollout is not None:
            r = e.rollout
            progress.update(
                "train rollouts", done=r.plans_done, total=r.plans_total, tokens=r.tokens, info=rollout_info(r)
            )
        elif e.stage in NOTES:
            progress.note(NOTES[e.stage].format(message=e.message))
        elif e.stage == "bon" and e.bon is not None:
            report_bon(progress, e.bon, judge_tokens=judge_tokens)

    return on_event


def _summary(out: Path, wall_s: float, result: LoopResult, ledger: TokenLedger) -> dict[str, Any]:
    """`--json`'s one line: where, how long, the RM's metrics, the reports, this run's tokens and the results (whose
    `rm` names the model that selected)."""
    tokens = {c: t.model_dump() for c, t in ledger.totals().items()}
    return {
        "out": str(out),
        "wall_s": round(wall_s, 1),
        "rm_metrics": result.rm_metrics,
        "rm_trained": result.rm_trained,
        "reports": {k: str(v) for k, v in result.reports.items()},
        "tokens_this_run": tokens,
        "warnings": result.bon.warnings,
        **result.bon.results.dump(),
    }


def _print_result(console: Console, result: LoopResult, ledger: TokenLedger, wall_s: float) -> None:
    m = result.rm_metrics
    acc = m.get("val_accuracy")
    say(
        console,
        f"reward model: {m.get('train_pairs')} train / {m.get('val_pairs')} val pairs, held-out pairwise accuracy "
        f"{acc:.3f}"
        if acc is not None
        else "reward model: no validation pairs",
    )
    if not result.rm_trained:
        console.print("[dim](reused: trained earlier on the same pairs)[/]")
    for w in result.bon.warnings:
        warn(console, w)
    for table in results_tables(result.bon.results):
        console.print(table)
    if ledger.totals():
        console.print(usage_table(ledger))
    else:
        console.print("[dim]no LLM calls this time: every trace and judgment was already on disk[/]")
    say(console, f"finished in {wall_s:.0f} s · report: {result.reports['md']} · {result.reports['html']}")
