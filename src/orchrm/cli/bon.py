"""`orchrm bon`: best-of-N on held-out questions — every selection method on the same N plans, one run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

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
from ..bon.report import METHOD_HEADER, mark_rows, method_rows, write_reports
from ..bon.run import BonConfig, BonProgress, abon
from ..llm import open_llm
from ..mas.rollout import RunConfig
from ..tasks import load_task


def results_tables(results: dict[str, Any]) -> list[Table]:
    """The comparison table and the marks, as the terminal shows them."""
    title = f"best-of-N on {results['questions']} held-out {results['task']} questions, N={results['n']}"
    table = Table(title=title, title_justify="left", caption="tokens per question; runs: plans executed; wall: critical path of the recorded latencies (~0 for cache replays)", caption_justify="left")
    for col in METHOD_HEADER:
        table.add_column(col, justify="left" if col == "method" else "right", no_wrap=col in ("method", METHOD_HEADER[1]))
    for row in method_rows(results):
        table.add_row(*row, style="bold" if row[0] == "rm" else None)
    marks = Table(title="marks (95% bootstrap intervals)", title_justify="left")
    marks.add_column("mark")
    marks.add_column("value", justify="right")
    for row in mark_rows(results):
        marks.add_row(*row)
    return [table, marks]


class BonBars:
    """Progress bars for a best-of-N stage: held-out rollout, then the judge."""

    def __init__(self, bar: Progress, label: str = "held-out") -> None:
        self.bar = bar
        self.rollout = bar.add_task(f"{label} plans", total=None, info="")
        self.judge: Any = None

    def update(self, p: BonProgress) -> None:
        if p.rollout is not None:
            r = p.rollout
            info = f"{r.plans_valid} valid · {r.correct} correct · {r.tokens:,} tok"
            self.bar.update(self.rollout, total=r.plans_total, completed=r.plans_done, info=info)
        if p.stage == "judge":
            if self.judge is None:
                self.judge = self.bar.add_task("judge (listwise)", total=p.to_judge or 1, info="")
            self.bar.update(self.judge, total=p.to_judge or 1, completed=p.judged if p.to_judge else 1)


def progress_columns() -> tuple:
    return (
        TextColumn("[bold]{task.description:<16}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
    )  # fmt: skip


def bon(
    task: TaskName,
    rm: Annotated[Path, typer.Option(help="Reward-model folder from `orchrm train-rm`.")],
    out: Annotated[Path, typer.Option(help="Output folder (created, or resumed when it exists).")],
    n: Annotated[int, typer.Option(help="Plans sampled per held-out question.")] = 8,
    n_questions: Annotated[int, typer.Option(help="Held-out (test split) questions.")] = 20,
    seed: Seed = 0,
    degree: Degree = "dag",
    constrained: Constrained = False,
    temperature: Temperature = 0.8,
    plan_max_tokens: PlanMaxTokens = 400,
    agent_max_tokens: AgentMaxTokens = 384,
    agent_max_samples: AgentMaxSamples = None,
    agent_max_rounds: AgentMaxRounds = None,
    judge: Annotated[bool, typer.Option(help="Run the Skill-RM listwise judge baseline.")] = True,
    judge_steps: Annotated[int, typer.Option(help="Judge agent steps per trajectory.")] = 3,
    judge_max_tokens: Annotated[int, typer.Option(help="Judge completion tokens per step.")] = 256,
    judge_n: Annotated[list[int] | None, typer.Option(help="N values the judge runs at (repeatable; default N).")] = None,
    tau: Annotated[float, typer.Option(help="rm-adaptive margin in reward standard deviations.")] = 0.5,
    parallel_questions: ParallelQuestions = 2,
    backend: Backend = "local",
    model: Model = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    concurrency: Concurrency = None,
    timeout: Annotated[float, typer.Option(help="Per-request timeout in seconds.")] = 3600.0,
) -> None:
    """Compare rm, rm-adaptive, random, majority, judge and oracle selection on the same N plans per question."""
    from ..rm.model import RewardModel

    the_task = load_task(task)
    reward_model = RewardModel.load(rm)
    config = BonConfig(n=n, judge=judge, judge_max_steps=judge_steps, judge_max_tokens=judge_max_tokens,
                       judge_ns=judge_n or [], tau=tau, seed=seed)  # fmt: skip
    console = Console(highlight=False)
    with open_llm(backend, model=model, base_url=base_url, api_key_env=api_key_env, concurrency=concurrency, timeout_s=timeout) as llm:
        run_config = RunConfig(
            task=task, split="test", n_questions=n_questions, n_plans=n, seed=seed, execute="all", backend=backend,
            model_id=llm.backend.model_id, degree=degree, constrained=constrained, temperature=temperature,
            plan_max_tokens=plan_max_tokens, agent_max_tokens=agent_max_tokens,
            agent_max_samples=agent_max_samples, agent_max_rounds=agent_max_rounds,
        )  # fmt: skip
        with Progress(*progress_columns(), console=console) as bar:
            bars = BonBars(bar)
            result = asyncio.run(abon(the_task, llm, reward_model, out, run_config, config,
                                      parallel_questions=parallel_questions, on_progress=bars.update))  # fmt: skip
    for w in result.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    reports = write_reports(result.results, out)
    for table in results_tables(result.results):
        console.print(table)
    console.print(f"report: {reports['md']} · {reports['html']} · {out / 'results.json'}")
