"""The command class of every verb: its `--help` layout and its `--config FILE`.

Help: click's plain two-column list, options grouped under typer's panels. typer's rich tables give every
column a share of the terminal: at 80 columns (a default terminal, any log) a long name such as
`--base-url, --orchestrator-base-url` was cut to `--base-url,--o…`. Click's list never cuts a name (a long
one puts its help on the next line), so every verb uses it; the options keep their `rich_help_panel`
(declared in `options.py`), and each panel is a section of its own, the unpanelled options first.
`tests/cli/test_help_width.py` renders every verb's help at 80 columns.

Config: `--config FILE` (YAML, JSON or TOML: a mapping of option names, `n-plans` or `n_plans`, to values)
fills the options the command line leaves out, through click's `default_map`, so a file's value is checked
and converted exactly as the same value typed as a flag, and `--help` after `--config` shows it as the
default. An unknown name is a usage error naming the file. `--profile` (`options.profile_option`) fills the
default map the same way, and `--help` shows a verb's own profile's values even when `--profile` is not typed.
"""

from __future__ import annotations

import copy
import functools
import inspect
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from typer.core import TyperCommand

from .. import safejson

OPTIONS = "Options"
#: The option that fills other options' defaults from a named profile (`options.profile_option`).
PROFILE = "profile"


class PanelCommand(TyperCommand):
    """A typer command whose help is click's plain format (never rich), one section per option panel."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **{**kw, "rich_markup_mode": None})

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # `--help` is eager and ends the parse when read; an eager option not typed before it has not yet seen its
        # default, so a verb's own profile (`orchrm demo`'s `demo`) would not have filled the defaults shown.
        profile = next((p for p in self.get_params(ctx) if p.name == PROFILE), None)
        if profile is not None and PROFILE not in ctx.params:
            profile.handle_parse_result(ctx, {}, [])  # its default, or the name `--config` gave
        super().format_help(ctx, formatter)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {"Arguments": [], OPTIONS: []}
        for param in self.get_params(ctx):
            record = _shown(param, ctx).get_help_record(ctx)
            if record is not None:
                own = "Arguments" if param.param_type_name == "argument" else OPTIONS
                sections.setdefault(getattr(param, "rich_help_panel", None) or own, []).append(record)
        for name, rows in sections.items():
            if rows:
                with formatter.section(name):
                    formatter.write_dl(rows)


def _shown(param: Any, ctx: click.Context) -> Any:
    """`param` with the default its help should show: typer writes a two-way flag's (`--constrained /
    --no-constrained`) declared default, not the one `--config` or `--profile` put in the default map."""
    filled = ctx.lookup_default(param.name, call=False) if param.name else None
    if not getattr(param, "secondary_opts", None) or not isinstance(filled, bool) or filled == param.default:
        return param
    shown = copy.copy(param)  # the parse goes on with the option itself: only its help changes
    shown.default = filled
    return shown


def with_config(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` with `--config FILE` at the end of its signature, where typer reads its options from."""
    signature = inspect.signature(function, eval_str=True)
    config = inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ConfigFile)

    @functools.wraps(function)
    def verb(*args: Any, config: Path | None = None, **kwargs: Any) -> Any:
        return function(*args, **kwargs)  # the file was read while the options were parsed

    parameters = [*signature.parameters.values(), config]
    verb.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return verb


def _parse(path: Path) -> Any:
    """The file's content; a file that cannot be read or parsed is a usage error naming it."""
    import yaml  # here: `orchrm --help` should not wait for it

    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml", ".toml"):
        raise typer.BadParameter(f"{path}: use a .yaml, .yml, .json or .toml file")
    try:
        if suffix == ".json":
            return safejson.read(path)
        text = path.read_text(encoding="utf-8")
        return tomllib.loads(text) if suffix == ".toml" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, safejson.UnsafeJSONError, yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc}") from None


def option_names(command: Any) -> dict[str, str]:
    """Each name a file may use for a parameter (its own, and each long flag) -> the parameter's name."""
    names: dict[str, str] = {}
    for param in command.params:
        if param.name and param.expose_value:
            names[param.name] = param.name
            for flag in param.opts:
                if flag.startswith("--"):
                    names[flag[2:].replace("-", "_")] = param.name
    return names


def _read_config(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    data = _parse(value)
    if data is None:
        data = {}  # an empty YAML file
    if not isinstance(data, dict):
        raise typer.BadParameter(f"{value} must hold a mapping of option names to values", ctx, param)
    names = option_names(ctx.command)
    unknown = [str(k) for k in data if str(k).replace("-", "_") not in names]
    if unknown:
        raise typer.BadParameter(f"{value}: no option {', '.join(unknown)} in `{ctx.command_path}`", ctx, param)
    ctx.default_map = {**(ctx.default_map or {}), **{names[str(k).replace("-", "_")]: v for k, v in data.items()}}


ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        exists=True,
        dir_okay=False,
        is_eager=True,
        expose_value=False,
        callback=_read_config,
        help="Option values from a YAML, JSON or TOML file (keys are option names: n-plans or n_plans); options given "
        "on the command line win.",
    ),
]
