"""`orchrm view`: serve a local web viewer over run folders on 127.0.0.1 (read-only)."""

from __future__ import annotations

import time
import webbrowser
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..mas.traces import TRACES_FILE
from ..view import load_runs, serve
from .say import say


def view(
    runs: Annotated[
        list[Path],
        typer.Argument(help=f"Run folders (rollout, best-of-N, loop or train-orchestrator) or {TRACES_FILE} files."),
    ],
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free port).")] = 8765,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in the default browser.")] = False,
) -> None:
    """Browse runs in a local web viewer on 127.0.0.1: plans as DAGs, agent calls, tokens, rewards and picks."""
    console = Console(highlight=False)
    t0 = time.perf_counter()
    loaded = load_runs(runs)
    server = serve(loaded, port)
    runs_loaded = f"{len(loaded)} run" + ("" if len(loaded) == 1 else "s")
    say(console, f"{runs_loaded} loaded in {time.perf_counter() - t0:.1f}s; serving {server.url} (Ctrl-C to stop)")
    if open_browser:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    finally:
        server.server_close()
