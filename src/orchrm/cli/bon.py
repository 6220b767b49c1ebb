"""`orchrm bon`: best-of-N on held-out questions — every selection method on the same N plans, one run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ..bon.config import BonConfig, resolve_judge
from ..bon.report import AUC_HEADER, METHOD_HEADER, auc_rows, content_lines, mark_rows, method_rows, write_reports
from ..bon.results import RESULTS_FILE, BonResults
from ..bon.run import BonProgress, BonResult, abon
from ..mas.rollout import RolloutSettings, RunConfig, agent_fields
from ..mas.traces import TRACES_FILE, locate_traces
from ..rm.device import DEVICE_HELP, Device, resolve_device
from ..tasks import load_task
from . import options as opt
from .llms import checkpoint_label, open_models
from .progress import Reporter, Tokens, category_meter, result_console, rollout_info
from .say import say, text, warn


def results_tables(results: BonResults) -> list[Table]:
    """The comparison table and the marks, as the terminal shows them."""
    title = f"best-of-N on {results.questions} held-out {results.task} questions, N={results.n}"
    table = Table(
        title=text(title),
        title_justify="left",
        caption="tokens per question; runs: plans executed; "
        "wall: critical path of the recorded latencies (~0 for cache replays)",
        caption_justify="left",
    )
    for col in METHOD_HEADER:
        table.add_column(
            col, justify="left" if col == "method" else "right", no_wrap=col in ("method", METHOD_HEADER[1])
        )
    for row in method_rows(results):
        table.add_row(*map(text, row), style="bold" if row[0] == "rm" else None)
    marks = Table(title="marks (95% bootstrap intervals)", title_justify="left")
    marks.add_column("mark")
    marks.add_column("value", justify="right")
    for row in mark_rows(results):
        marks.add_row(*map(text, row))
    auc = Table(title="within-question AUC (questions with a right and a wrong plan)", title_justify="left")
    for col in AUC_HEADER:
        auc.add_column(col, justify="left" if col == AUC_HEADER[0] else "right")
    for row in auc_rows(results):
        auc.add_row(*map(text, row))
    content = Table(
        title="plan content: does it decide, is it read (among plans of one shape)",
        title_justify="left",
        show_header=False,
    )
    content.add_column("measure")
    for line in content_lines(results):
        content.add_row(text(line))
    return [table, marks, auc, *([content] if results.content is not None else [])]


def report_bon(progress: Reporter, p: BonProgress, label: str = "held-out", judge_tokens: Tokens = 0) -> None:
    """A best-of-N stage's counters: the held-out rollout, the RM's scoring, then the listwise judge, whose tokens
    are `judge_tokens` (a meter: `category_meter(llm.ledger, "verify")`, what the judge has spent so far)."""
    if p.rollout is not None:
        r = p.rollout
        progress.update(f"{label} plans", done=r.plans_done, total=r.plans_total, tokens=r.tokens, info=rollout_info(r))
    if p.stage == "score":
        progress.note(f"scoring the {label} plans with the reward model")
    if p.stage == "judge":
        progress.update(
            "judge (listwise)", done=p.judged if p.to_judge else 1, total=p.to_judge or 1, tokens=judge_tokens
        )


def show_results(console: Console, result: BonResult, out: Path, *, as_json: bool = False) -> None:
    """The warnings, the reports written into `out`, and the tables; with `as_json`, the results as one JSON
    object on stdout (the tables are left out: the object holds everything they show)."""
    for w in result.warnings:
        warn(console, w)
    reports = write_reports(result.results, out)
    if as_json:
        files = {"results": str(out / RESULTS_FILE), **{k: str(v) for k, v in reports.items()}}
        print(json.dumps({"out": str(out), "files": files, **result.results.dump()}))
        return
    for table in results_tables(result.results):
        console.print(table)
    say(console, f"report: {reports['md']} · {reports['html']} · {out / RESULTS_FILE}")


if TYPE_CHECKING:
    from ..llm import LLM

PRIOR_HELP = (
    f"Training traces (a rollout folder or its {TRACES_FILE}) that fit the plan-shape `prior` baseline; "
    "without them `prior` is left out. `orchrm demo` passes its own training rollout."
)

#: The flags of `BonConfig`'s options whose names are not their fields' (a validation error names what was typed).
BON_FLAGS = {"judge_max_steps": "--judge-steps", "judge_ns": "--judge-n"}


def _run_config(run: dict[str, Any], llm: LLM, agent_llm: LLM, checkpoint: str | None) -> RunConfig:
    """The rollout settings as recorded: the verb's, with the models that will write and execute the plans."""
    fields = {"checkpoint": checkpoint_label(llm, checkpoint), "model_id": llm.backend.model_id}
    return RunConfig.model_validate({**run, **fields, **agent_fields(llm, agent_llm)})


@opt.with_models
@opt.with_progress
@opt.options_from(RolloutSettings)
def bon(
    ctx: typer.Context,
    task: opt.TaskName,
    rm: Annotated[Path, typer.Option(help="Reward-model folder from `orchrm train-rm`.")],
    out: Annotated[Path, typer.Option(help="Output folder (created, or resumed when it exists).")],
    *,
    # own: best-of-8 on held-out questions, more plans and questions than a rollout's default 4 and 10
    n_plans: int = opt.field_option(RunConfig, "n_plans", default=8),
    n: int | None = opt.old_flag("--n", "--n-plans"),
    n_questions: Annotated[int, typer.Option(help="Held-out (test split) questions.")] = 20,
    profile: str = opt.profile_option(),
    settings: RolloutSettings,
    judge: bool | None = opt.judge_option(),
    judge_max_steps: int = opt.field_option(BonConfig, "judge_max_steps", "--judge-steps"),
    judge_max_tokens: int = opt.field_option(BonConfig, "judge_max_tokens"),
    judge_ns: list[int] | None = opt.field_option(BonConfig, "judge_ns", "--judge-n", note="Repeatable."),
    tau: float = opt.field_option(BonConfig, "tau"),
    prior_traces: Annotated[Path | None, typer.Option(help=PRIOR_HELP)] = None,
    device: Annotated[Device, typer.Option(help=DEVICE_HELP, rich_help_panel=opt.MODELS)] = "auto",
    checkpoint: opt.Checkpoint = None,
    orchestrator_adapter: opt.OrchestratorAdapter = None,
    parallel_questions: opt.ParallelQuestions = 2,
    models: opt.ModelOptions,
    reporting: opt.ProgressOptions,
) -> None:
    """Compare rm, rm-adaptive, random, shortest, prior, majority, judge and oracle selection on the same N plans."""
    from ..rm.model import RewardModel  # torch: loaded only when a verb needs it

    resolve_device(device)  # --device cuda without a GPU: one line before any model loads
    if prior_traces is not None:
        locate_traces(prior_traces)  # a missing file is a one-line error before any model loads
    n_plans = opt.renamed(ctx, n_plans, n, "n_plans", "--n")
    the_task = load_task(task)
    judge = resolve_judge(judge, the_task.agent_types)
    judging = dict(judge=judge, judge_max_steps=judge_max_steps, judge_max_tokens=judge_max_tokens, tau=tau)
    config = opt.checked(BonConfig, dict(judging, judge_ns=judge_ns or [], seed=settings.seed), BON_FLAGS)
    held_out = dict(task=task, split="test", n_questions=n_questions, n_plans=n_plans, execute="all", profile=profile)
    run = dict(settings.model_dump(), **held_out, backend=models.backend)
    opt.checked(RunConfig, run)
    reward_model = RewardModel.load(rm, device=device)
    with open_models(models, orchestrator_adapter=orchestrator_adapter) as (llm, agent_llm):
        run_config = _run_config(run, llm, agent_llm, checkpoint)
        with reporting.reporter() as progress:
            judged = category_meter(llm.ledger, "verify")  # the judge runs on `llm`, its calls under `verify`
            result = asyncio.run(
                abon(
                    the_task,
                    llm,
                    reward_model,
                    out,
                    run_config,
                    config,
                    agent_llm=agent_llm,
                    parallel_questions=parallel_questions,
                    prior_traces=prior_traces,
                    on_progress=lambda p: report_bon(progress, p, judge_tokens=judged),
                )
            )
    show_results(result_console(reporting.as_json), result, out, as_json=reporting.as_json)
