"""`orchrm import`: executions run on another MAS (JSONL or a datasets folder) -> a run folder of traces."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..mas.interop import IMPORT_FILE, ImportDefaults, import_executions
from ..mas.traces import TRACES_FILE
from .say import say

#: The option defaults are `ImportDefaults`', read from it so the two cannot drift.
DEFAULTS = ImportDefaults()


class InputFormat(str, Enum):
    jsonl = "jsonl"
    datasets = "datasets"


class PlanFormat(str, Enum):
    orchrm = "orchrm"
    mas_orchestra = "mas-orchestra"


def import_(
    source: Annotated[
        Path, typer.Argument(help="A JSONL file, or a folder saved with datasets' save_to_disk (--format datasets).")
    ],
    out: Annotated[
        Path,
        typer.Option(
            help=f"Run folder to write ({TRACES_FILE}, {IMPORT_FILE}); replaced whole if an earlier import made it."
        ),
    ],
    format: Annotated[InputFormat, typer.Option("--format", help="How the rows are stored.")] = InputFormat.jsonl,
    plan_format: Annotated[
        PlanFormat,
        typer.Option(help="How the plans are written: orchrm JSON or MAS-Orchestra's <agent>/<edge> blocks."),
    ] = PlanFormat.orchrm,
    split: Annotated[str | None, typer.Option(help="The split of a datasets folder holding several.")] = None,
    task: Annotated[str, typer.Option(help="Task name for rows that give none.")] = DEFAULTS.task,
    checkpoint: Annotated[
        str, typer.Option(help="Orchestrator checkpoint label for rows that give none.")
    ] = DEFAULTS.checkpoint,
    model_id: Annotated[str, typer.Option(help="Orchestrator model for rows that give none.")] = DEFAULTS.model_id,
    correct_at: Annotated[
        float, typer.Option(help="A row with a score and no `correct` is correct when score >= this.")
    ] = DEFAULTS.correct_at,
) -> None:
    """Import executions run on another MAS (question, plan, answer or grade) as traces that `orchrm pairs` reads."""
    defaults = ImportDefaults(task=task, checkpoint=checkpoint, model_id=model_id, correct_at=correct_at)
    report = import_executions(
        source,
        out,
        fmt=format.value,
        plan_format=plan_format.value,
        split=split,
        defaults=defaults,  # type: ignore[arg-type]
    )
    console = Console(highlight=False)
    console.print(
        f"{report.rows} executions of {report.questions} questions: {report.valid_plans} valid plans, "
        f"{report.graded} graded, {report.answered} with an answer"
    )
    for rule, n in report.plan_errors.items():
        say(console, f"invalid plans ({rule}): {n}", "dim")
    if len(report.checkpoints) > 1:
        say(console, "checkpoints: " + ", ".join(f"{k} {v}" for k, v in report.checkpoints.items()), "dim")
    say(console, f"wrote {out}/{{{TRACES_FILE},{IMPORT_FILE}}}; next: orchrm pairs {out} --out PAIRS", soft_wrap=True)
