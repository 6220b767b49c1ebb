"""Options every verb that talks to an LLM shares, declared once so their names and help never drift."""

from __future__ import annotations

from typing import Annotated

import typer

from ..llm import BACKENDS

Backend = Annotated[str, typer.Option(help=f"One of: {', '.join(BACKENDS)}.")]
Model = Annotated[str | None, typer.Option(help="Embedded model name or .gguf path (local); served model name (openai).")]
BaseUrl = Annotated[str | None, typer.Option(help="OpenAI-compatible server URL, e.g. http://host:8000/v1 (openai backend).")]
ApiKeyEnv = Annotated[str, typer.Option(help="Environment variable holding the API key.")]
Concurrency = Annotated[int | None, typer.Option(help="Requests in flight (local: server slots).")]
