"""Options the verbs share (the LLM, the task, the progress output), and the options made from a config's fields.

A setting that a config declares (a pydantic field: name, type, default, `description`) is never declared
again here: `field_option` makes one typer option from one field, and `options_from` turns a whole settings
model (e.g. `RolloutSettings`) into one option per field and hands the verb the validated model. A verb
names only what is its own: a flag kept from before (`--agent-timeout`), a panel, a default of its own
(best-of-N's 8 plans). `tests/cli/test_options.py` holds every option that fills a config field to that field's
default and help.

`--profile NAME` (`profile_option`) fills the options of the fields a named profile sets (`orchrm.profiles`) that
the command line and `--config` leave out, through click's `default_map` as `--config` does, so `--help` after it
shows the profile's values; a verb's own profile (`orchrm demo`'s `demo`) is what its plain `--help` shows
(`panels.PanelCommand`). A renamed option keeps its old flag for one release, hidden (`old_flag`).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel, Field, ValidationError
from pydantic.fields import FieldInfo

from ..errors import ConfigError
from ..llm import BACKENDS
from ..mas.run_config import RunConfig
from ..profiles import BASE, PROFILES, profile_help
from ..tasks import TASK_HELP
from .panels import option_names
from .progress import DEFAULT_INTERVAL_S, Reporter, choose_mode

#: `RunConfig`'s defaults, for the few options that fill a run's own field (the backend) by hand.
RUN = RunConfig(task="")
#: Per-request timeout of the verbs that run plans: long, because a busy CPU is slow.
REQUEST_TIMEOUT_S = 3600.0

# Help panels (see cli/panels.py): what a run is (task, output, counts, seed) comes first, unpanelled; the
# settings most runs leave alone follow, grouped under these.
PLANS = "Plans"
MODELS = "Models and servers"
AGENTS = "Sub-agents"
OUTPUT = "Progress output"

Backend = Annotated[str, typer.Option(help=f"One of: {', '.join(BACKENDS)}.", rich_help_panel=MODELS)]
Model = Annotated[
    str | None,
    typer.Option(help="Embedded model name or .gguf path (local); served model name (openai).", rich_help_panel=MODELS),
]
BaseUrl = Annotated[
    str | None,
    typer.Option(
        help="OpenAI-compatible server URL, e.g. http://host:8000/v1 (openai backend); "
        "several, comma-separated, are a fleet serving one model (least-loaded routing, failover).",
        rich_help_panel=MODELS,
    ),
]

OrchestratorAdapter = Annotated[
    Path | None,
    typer.Option(
        help="A trained orchestrator (a train-orchestrator run folder, its adapter/ or a checkpoints/checkpoint-N) "
        "that writes the plans; sub-agents stay the base model (local backend).",
        rich_help_panel=PLANS,
    ),
]
Checkpoint = Annotated[
    str | None,
    typer.Option(
        help="Label of the orchestrator checkpoint in the traces (default: the adapter's run:step-N, else base).",
        rich_help_panel=PLANS,
    ),
]


class ModelOptions(BaseModel):
    """The models a verb that runs plans opens, in two roles: the orchestrator writes plans (the old --backend,
    --model and --base-url names still work), the sub-agents run them (default: the orchestrator's model, so
    one model stays the default). Made into options by `with_models`; opened by `cli.llms.open_models`."""

    backend: str = Field("local", description=f"The orchestrator's backend: {', '.join(BACKENDS)}.")
    model: str | None = Field(
        None, description="The model that writes plans: embedded name or .gguf path (local); served name (openai)."
    )
    base_url: str | None = Field(
        None,
        description="The orchestrator's server, e.g. http://host:8000/v1 (openai backend); several, comma-separated, "
        "are a fleet (least-loaded routing, failover).",
    )
    agent_backend: str | None = Field(None, description="The sub-agents' backend (default: the orchestrator's).")
    agent_model: str | None = Field(
        None,
        description="The model that runs the sub-agents (default: the orchestrator's; with the local backend, "
        "a second llama-server).",
    )
    agent_base_url: str | None = Field(
        None,
        description="The sub-agents' server (default: the orchestrator's when the backend is the same); "
        "several, comma-separated, are a fleet.",
    )
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the API key.")
    concurrency: int | None = Field(
        None, ge=1, description="Requests in flight (local: server slots; a fleet: per endpoint)."
    )
    timeout: float = Field(
        REQUEST_TIMEOUT_S, gt=0, description="Per-request timeout in seconds (long: a busy CPU is slow)."
    )


def _help(name: str) -> str | None:
    return ModelOptions.model_fields[name].description


# One-role verbs (generate, judge) name the same key and concurrency.
ApiKeyEnv = Annotated[str, typer.Option(help=_help("api_key_env"), rich_help_panel=MODELS)]
Concurrency = Annotated[int | None, typer.Option(help=_help("concurrency"), rich_help_panel=MODELS)]

TaskName = Annotated[str, typer.Option(help=f"The task: {TASK_HELP}.")]
ParallelQuestions = Annotated[int, typer.Option(help="Questions in flight at once.", rich_help_panel=MODELS)]


def _read_profile(ctx: typer.Context, param: typer.CallbackParam, value: str) -> str:
    """Lay profile `value` under the values `--config` gave (a file's value wins over a profile's)."""
    if ctx.resilient_parsing:
        return value
    if value not in PROFILES:
        raise typer.BadParameter(f"no profile {value!r} (there are: {', '.join(PROFILES)})", ctx, param)
    names = option_names(ctx.command)
    laid = {names[k]: v for k, v in PROFILES[value].items() if k in names}
    ctx.default_map = {**laid, **(ctx.default_map or {})}
    return value


def profile_option(default: str = BASE) -> Any:
    """`--profile`, as a parameter's default: the profile's name reaches the verb, which records it."""
    return typer.Option(default, "--profile", is_eager=True, callback=_read_profile, help=profile_help())


def old_flag(flag: str, new: str) -> Any:
    """A renamed option's old flag, hidden, kept for one release (`None` when not given: see `renamed`)."""
    return typer.Option(None, flag, hidden=True, help=f"Old name of {new}, kept for one release.")


def renamed(ctx: typer.Context, value: Any, old: Any, name: str, flag: str) -> Any:
    """Option `name`'s value, or its old `flag`'s where that was given; both given is one line naming them.
    `ctx` is the verb's own (typer's): typer 0.29 carries its own click, whose context `click` cannot see."""
    if old is None:
        return value
    if getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE":  # the enum of typer's own click
        raise ConfigError(f"--{name.replace('_', '-')} and {flag} are one option: give one of them")
    return old


Settings = TypeVar("Settings", bound=BaseModel)
#: Flags kept from before an option was made from its field (users' scripts): field name -> flags.
FLAGS: dict[str, tuple[str, ...]] = {"agent_timeout_s": ("--agent-timeout",)}


def rollout_panel(name: str) -> str | None:
    """Where a rollout setting is shown: the seed with what a run is, the sub-agents' budgets apart, the rest
    under Plans."""
    return None if name == "seed" else AGENTS if name.startswith("agent_") else PLANS


def field_default(field: FieldInfo) -> Any:
    return field.get_default(call_default_factory=True)


def field_option(
    model: type[BaseModel], name: str, *flags: str, panel: str | None = None, default: Any = ..., note: str = ""
) -> Any:
    """A typer option, written as a parameter's default (`n_plans: int = field_option(RunConfig, "n_plans")`),
    whose default and help are the field's: `default` only where the verb's own differs on purpose, `note`
    appended to the help where the verb adds to it."""
    field = model.model_fields[name]
    value = field_default(field) if default is ... else default
    help_text = " ".join(part for part in (field.description or "", note) if part)
    return typer.Option(value, *(flags or FLAGS.get(name, ())), help=help_text, rich_help_panel=panel)


def judge_option() -> Any:
    """`--judge/--no-judge`, None when not given: best-of-N then asks the task (`resolve_judge`)."""
    return typer.Option(
        None,
        "--judge/--no-judge",
        help="Run the Skill-RM listwise judge baseline. Default: on, off for a task whose sub-agents are all exact "
        "tools (`world_qa:tools=exact`), where it would cost more than the loop itself.",
    )


def checked(model: type[Settings], values: Mapping[str, Any], flags: Mapping[str, str] | None = None) -> Settings:
    """`model` from an option's values; a bad value is one line naming its flag, before any model loads."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        flag = (flags or {}).get(name) or "--" + name.replace("_", "-")
        raise ConfigError(f"{flag}: {err['msg']}") from None


def options_from(
    model: type[Settings],
    *,
    into: str = "settings",
    defaults: Settings | None = None,
    panel: Callable[[str], str | None] = rollout_panel,
    flags: Mapping[str, tuple[str, ...]] | None = None,
    unset: Collection[str] = (),
    exclude: Collection[str] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A verb whose parameter `into` (a `model`) becomes one option per field of `model`, at its place in the
    signature: the field's name, type, help, and default (`defaults`' value where given: a verb whose
    settings differ on purpose), its flags `--field-name` unless `flags` (or `FLAGS`) keeps older ones. The
    verb receives the validated model (`checked`). An option of `unset` defaults to None and, when not given,
    leaves its field to the model (a default that depends on other fields, as `RMConfig`'s per backbone); the
    fields in `exclude` are the verb's own to declare and fill (a value typed in another shape)."""
    fields = {n: f for n, f in model.model_fields.items() if n not in exclude}
    names = {**FLAGS, **(flags or {})}

    def option(name: str, field: FieldInfo) -> inspect.Parameter:
        default = None if name in unset else getattr(defaults, name) if defaults is not None else field_default(field)
        info = field_option(model, name, *names.get(name, ()), panel=panel(name), default=default)
        annotation = _typed(field.annotation)
        annotation = annotation | None if name in unset else annotation
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)

    def decorate(verb: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(verb, eval_str=True)
        params: list[inspect.Parameter] = []
        for p in signature.parameters.values():
            params += (
                [option(n, f) for n, f in fields.items()]
                if p.name == into
                else [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)]
            )
        shown = {n: (names.get(n) or ("--" + n.replace("_", "-"),))[0] for n in fields}

        @functools.wraps(verb)
        def run(**kwargs: Any) -> Any:
            values = {n: kwargs.pop(n) for n in fields if n in kwargs}
            values = {n: v for n, v in values.items() if not (v is None and n in unset)}
            return verb(**kwargs, **{into: checked(model, values, shown)})

        run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        del run.__wrapped__  # typer reads the signature above, not the verb's own
        return run

    return decorate


def _typed(annotation: Any) -> Any:
    """A field's type as typer takes it: a repeatable option is a list (`tuple[str, ...]` -> `list[str]`)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return list[args[0]]  # type: ignore[valid-type]
    return annotation


#: The orchestrator's options keep their first names (users' scripts): --backend, --model, --base-url.
MODEL_FLAGS = {
    name: (f"--{name.replace('_', '-')}", f"--orchestrator-{name.replace('_', '-')}")
    for name in ("backend", "model", "base_url")
}
#: A verb that runs plans: its `models: ModelOptions` parameter becomes the model options, under one panel.
with_models = options_from(ModelOptions, into="models", panel=lambda name: MODELS, flags=MODEL_FLAGS)


class ProgressOptions(BaseModel):
    """How a long verb reports as it runs (see cli/progress.py): bars on a terminal, heartbeat lines elsewhere.
    Made into options by `with_progress`, under one panel; the verb reports to `reporter()`."""

    quiet: bool = Field(False, description="No progress output (errors and the final result only).")
    as_json: bool = Field(
        False, description="Progress as JSON lines on stderr; the result as one JSON object on stdout."
    )
    log_every: float = Field(
        DEFAULT_INTERVAL_S, description="Seconds between progress lines when stderr is not a terminal."
    )

    def reporter(self) -> Reporter:
        return Reporter(choose_mode(quiet=self.quiet, as_json=self.as_json), interval_s=self.log_every)


#: --quiet has its short flag, and --json names the result's form, not the field.
PROGRESS_FLAGS = {"quiet": ("--quiet", "-q"), "as_json": ("--json",)}


def progress_options(*, json: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A long verb: its `reporting: ProgressOptions` parameter becomes --quiet, --json (unless `json` is False: a
    verb whose result is written in one form only) and --log-every."""
    return options_from(
        ProgressOptions,
        into="reporting",
        panel=lambda name: OUTPUT,
        flags=PROGRESS_FLAGS,
        exclude=() if json else ("as_json",),
    )


with_progress = progress_options()
