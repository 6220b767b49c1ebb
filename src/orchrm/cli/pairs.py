"""`orchrm pairs`: rollout runs -> win-lose plan pairs (TRL preference JSONL) with stats per source."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..mas.traces import TRACES_FILE, locate_traces, read_traces
from ..pairs import PairConfig, PairStats, build_pairs, load_counterfactual, write_pairs_dir
from ..pairs.rows import MANIFEST_FILE, STATS_FILE, TRAIN_FILE, VAL_FILE
from . import options as opt
from .say import say, text


def stats_table(stats: PairStats) -> Table:
    table = Table(
        title=f"{stats.total} pairs from {stats.traces} traces, {stats.questions} questions", title_justify="left"
    )
    for col in ("source", "train", "val"):
        table.add_column(col, justify="left" if col == "source" else "right")
    for source, c in stats.per_source.items():
        table.add_row(text(source), str(c.train), str(c.val))
    return table


def edits_table(stats: PairStats) -> Table:
    """Counterfactual edits by kind: what was tried, what ran, what kept its outcome, what was paired."""
    columns = ("tried", "invalid", "unfinished", "executed", "unscored", "same_outcome", "paired")
    table = Table(title="counterfactual edits", title_justify="left")
    table.add_column("edit", justify="left", no_wrap=True)
    for col in columns:
        table.add_column(col.removesuffix("_outcome"), justify="right")  # "same": kept its source's outcome
    for kind, c in stats.edits.items():
        table.add_row(text(kind), *(str(getattr(c, col)) for col in columns))
    return table


#: The flags `pairs` had before its options were made from `PairConfig` (users' scripts still run).
PAIR_FLAGS = {"sources": ("--source",), "max_pairs_per_question": ("--max-per-question",)}


@opt.options_from(PairConfig, into="cfg", panel=lambda name: None, flags=PAIR_FLAGS, unset=("sources",))
def pairs(
    runs: Annotated[list[Path], typer.Argument(help=f"Run folders (or {TRACES_FILE} files) from `orchrm rollout`.")],
    out: Annotated[
        Path,
        typer.Option(help=f"Folder for {TRAIN_FILE}, {VAL_FILE}, {STATS_FILE} and {MANIFEST_FILE} (replaced whole)."),
    ],
    *,
    cfg: PairConfig,
    counterfactual: Annotated[
        list[Path] | None,
        typer.Option(
            help="Folder from `orchrm counterfactual` (repeatable): "
            "its edits are paired with their source plans in RUNS by outcome."
        ),
    ] = None,
) -> None:
    """Build label-free win-lose plan pairs from executed rollouts."""
    traces = [t for run in runs for t in read_traces(locate_traces(run))]
    edits = [cf for folder in counterfactual or [] for cf in load_counterfactual(folder)]
    result = build_pairs(traces, cfg, edits)
    write_pairs_dir(out, result.train, result.val, result.stats, render_version=cfg.render_version)
    console = Console(highlight=False)
    report_stats(console, result.stats)
    s = result.stats
    say(
        console,
        f"wrote {out}/{{{TRAIN_FILE},{VAL_FILE},{STATS_FILE},{MANIFEST_FILE}}} "
        f"({s.train_questions} train / {s.val_questions} val questions)",
    )


def report_stats(console: Console, s: PairStats) -> None:
    """The stats table, the edits table (when there were edits) and every count of what was left out."""
    console.print(stats_table(s))
    if s.edits:
        console.print(edits_table(s))
    left_out = {
        **{f"questions: {k}": v for k, v in s.questions_without_pairs.items()},
        "duplicate plans merged": s.duplicate_plans_merged,
        "executions without a score": s.unscored_executions,
        "scorer errors": s.scorer_errors,
        "pairs dropped (sources disagree)": s.conflicting_pairs_dropped,
        "pairs over the per-question cap": s.pairs_over_question_cap,
        **{f"pairs dropped to balance ({k})": v for k, v in s.pairs_dropped_to_balance.items()},
        "edits whose source plan is not in RUNS": s.edits_without_source,
    }
    for what, n in left_out.items():
        if n:
            say(console, f"{what}: {n}", "dim")
