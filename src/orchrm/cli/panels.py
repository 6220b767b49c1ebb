"""How a verb's `--help` is laid out: click's plain two-column list, options grouped under typer's panels.

typer's rich tables give every column a share of the terminal: at 80 columns (a default terminal, any log) a
long name such as `--base-url, --orchestrator-base-url` was cut to `--base-url,--o…`. Click's list never cuts
a name (a long one puts its help on the next line), so every verb uses it; the options keep their
`rich_help_panel` (declared in `options.py`), and each panel is a section of its own, the unpanelled
options first. `tests/cli/test_help_width.py` renders every verb's help at 80 columns.
"""

from __future__ import annotations

from typing import Any

import click
from typer.core import TyperCommand

OPTIONS = "Options"


class PanelCommand(TyperCommand):
    """A typer command whose help is click's plain format (never rich), one section per option panel."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **{**kw, "rich_markup_mode": None})

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {"Arguments": [], OPTIONS: []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                own = "Arguments" if param.param_type_name == "argument" else OPTIONS
                sections.setdefault(getattr(param, "rich_help_panel", None) or own, []).append(record)
        for name, rows in sections.items():
            if rows:
                with formatter.section(name):
                    formatter.write_dl(rows)
