"""The typer app: verbs are registered here; expected failures become one red line, never a traceback.

Each verb's module is imported only when that verb runs (or shows its own help): the modules pull in the
LLM clients, numpy and the rest, and `orchrm --help` should not wait for all of them. The top-level help
lists each verb by its `summary`, which `tests/cli/test_app.py` holds equal to the command's docstring.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any

import click
import typer
from rich.console import Console
from typer.core import TyperGroup

from ..errors import OrchrmError
from ..version import __version__
from .panels import PanelCommand, with_config
from .say import error


@dataclass(frozen=True)
class Verb:
    name: str
    module: str  # under orchrm.cli
    attr: str  # a command function, or a Typer sub-app
    summary: str


VERBS = (
    Verb(
        "generate",
        "generate",
        "generate",
        "Send one prompt through a backend and print the completions with their token usage.",
    ),
    Verb(
        "demo",
        "demo",
        "demo",
        "Rollouts -> evidence -> pairs -> RM training -> best-of-N against every baseline -> report.",
    ),
    Verb(
        "judge",
        "judge",
        "judge",
        "Judge responses with the skill evaluator; one judgment per input row, token usage under `verify`.",
    ),
    Verb(
        "bon",
        "bon",
        "bon",
        "Compare rm, rm-adaptive, random, shortest, prior, majority, judge and oracle selection on the same N plans.",
    ),
    Verb(
        "rollout",
        "rollout",
        "rollout",
        "Sample plans for a task's questions, execute them, and append one trace per (question, plan) to OUT.",
    ),
    Verb(
        "show",
        "show",
        "show",
        "Show a run's traces as a table, or one trace in full (--index, or --question [--plan]).",
    ),
    Verb(
        "import",
        "imports",
        "import_",
        "Import executions run on another MAS (question, plan, answer or grade) as traces that `orchrm pairs` reads.",
    ),
    Verb(
        "counterfactual",
        "counterfactual",
        "counterfactual",
        "Edit a run's executed plans, execute the edited plans, and record each edit beside its trace in OUT.",
    ),
    Verb("pairs", "pairs", "pairs", "Build label-free win-lose plan pairs from executed rollouts."),
    Verb(
        "train-rm",
        "reward_model",
        "train_rm",
        "Train a Bradley–Terry reward model on plan pairs (TRL RewardTrainer).",
    ),
    Verb(
        "score",
        "reward_model",
        "score",
        'Score plans with a reward model; each output line adds "scores" (one per plan, higher is better).',
    ),
    Verb(
        "serve",
        "reward_model",
        "serve",
        "Serve a reward model over HTTP: POST /score, POST /openrlhf (OpenRLHF's protocol), GET /health, GET /info.",
    ),
    Verb(
        "export",
        "export",
        "export",
        "Export a reward model as a plain transformers sequence-classification folder, with its input template.",
    ),
    Verb(
        "train-orchestrator",
        "train_orchestrator",
        "train_orchestrator",
        "Train LoRA adapters on the plan-writing model with GRPO (TRL); the adapter lands in OUT/adapter.",
    ),
    Verb(
        "prompts",
        "prompts",
        "prompts",
        "Write the orchestrator's training prompts as a verl, OpenRLHF or TRL dataset file.",
    ),
    Verb(
        "view",
        "view",
        "view",
        "Browse runs in a local web viewer on 127.0.0.1: plans as DAGs, agent calls, tokens, rewards and picks.",
    ),
    Verb("models", "models", "app", "List, prepare and verify the embedded models."),
)


def load_verb(verb: Verb) -> click.Command:
    """The verb's real click command, built by typer from its function (or sub-app)."""
    target = getattr(importlib.import_module(f"{__package__}.{verb.module}"), verb.attr)
    if isinstance(target, typer.Typer):
        command: click.Command = typer.main.get_group(target)
    else:
        single = typer.Typer(add_completion=False)  # completion is the top level's to offer (it does not)
        single.command(verb.name, cls=PanelCommand)(with_config(target))
        command = typer.main.get_command(single)
    command.name = verb.name
    return command


class LazyVerbs(TyperGroup):
    """Lists every verb by name and summary; imports a verb's module only when it is resolved to run."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.commands.update({v.name: click.Command(v.name, help=v.summary) for v in VERBS})

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, _, rest = super().resolve_command(ctx, args)
        verb = next(v for v in VERBS if v.name == name)
        return name, load_verb(verb), rest


app = typer.Typer(
    name="orchrm",
    help="Label-free reward models for LLM multi-agent orchestration plans.",
    cls=LazyVerbs,
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


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and `python -m orchrm`."""
    try:
        app(args=argv, prog_name="orchrm")
    except OrchrmError as exc:
        error(Console(stderr=True, highlight=False), exc, exc.detail)
        sys.exit(1)
    except KeyboardInterrupt:
        Console(stderr=True).print("interrupted")
        sys.exit(130)
