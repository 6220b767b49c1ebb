"""The typer app: verbs are registered here; expected failures become one red line, never a traceback."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from .. import __version__
from ..errors import OrchrmError
from . import bon, demo, generate, models, pairs, reward_model, rollout, show
from . import judge as judge_verb

app = typer.Typer(
    name="orchrm",
    help="Label-free reward models for LLM multi-agent orchestration plans.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"orchrm {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Label-free reward models for LLM multi-agent orchestration plans."""


app.add_typer(models.app, name="models")
app.command("generate")(generate.generate)
app.command("demo")(demo.demo)
app.command("judge")(judge_verb.judge)
app.command("bon")(bon.bon)
app.command("rollout")(rollout.rollout)
app.command("show")(show.show)
app.command("pairs")(pairs.pairs)
app.command("train-rm")(reward_model.train_rm)
app.command("score")(reward_model.score)
app.command("serve")(reward_model.serve)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and `python -m orchrm`."""
    try:
        app(args=argv, prog_name="orchrm")
    except OrchrmError as exc:
        err = Console(stderr=True, highlight=False)
        err.print(f"[bold red]error:[/] {exc}", markup=True, soft_wrap=True)
        if exc.detail:
            err.print(exc.detail, markup=False, style="dim", soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        Console(stderr=True).print("interrupted")
        sys.exit(130)
