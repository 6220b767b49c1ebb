"""`orchrm generate`: one prompt through any backend, to check a set-up."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.panel import Panel

from .. import safejson
from ..errors import ConfigError
from ..llm import LLM, Completion, GenerateConfig, open_llm
from . import options as opt
from .render import completions_table, usage_table
from .say import text


def _read_schema(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        schema = safejson.read(path)
    except OSError as exc:
        raise ConfigError(f"cannot read schema file {path}: {exc.strerror}") from exc
    except safejson.UnsafeJSONError as exc:
        raise ConfigError(f"schema file {path} is not valid JSON: {exc.reason} ({exc.rule})") from exc
    if not isinstance(schema, dict):
        raise ConfigError(f"schema file {path} must hold a JSON object")
    return schema


def _generate_config(
    temperature: float, top_p: float, max_tokens: int, stop: list[str] | None, seed: int | None, schema: Path | None
) -> GenerateConfig:
    return GenerateConfig(
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        stop=tuple(stop or ()),
        seed=seed,
        json_schema=_read_schema(schema),
    )


def _show(llm: LLM, completions: list[Completion], as_json: bool) -> None:
    if as_json:
        out = {
            "backend": llm.backend.kind,
            "model_id": llm.backend.model_id,
            "completions": [c.model_dump() for c in completions],
            "usage": {k: v.model_dump() for k, v in llm.ledger.totals().items()},
        }
        print(json.dumps(out, indent=2))
        return
    console = Console()
    for c in completions:
        console.print(Panel(text(c.text), title=f"sample {c.sample_index}", title_align="left"))
    console.print(completions_table(completions))
    console.print(usage_table(llm.ledger))


def generate(
    prompt: Annotated[str, typer.Argument(help="The user message; '-' reads it from stdin.")],
    backend: opt.Backend = "local",
    model: opt.Model = None,
    base_url: opt.BaseUrl = None,
    api_key_env: opt.ApiKeyEnv = "OPENAI_API_KEY",
    system: Annotated[str | None, typer.Option(help="A system message.")] = None,
    n: Annotated[int, typer.Option("-n", help="Number of completions.")] = 1,
    temperature: Annotated[float, typer.Option(help="0 is greedy.")] = 0.0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling mass.")] = 1.0,
    max_tokens: Annotated[int, typer.Option(help="Completion token limit.")] = 256,
    stop: Annotated[list[str] | None, typer.Option(help="Stop sequence (repeatable).")] = None,
    seed: Annotated[int | None, typer.Option(help="Base seed; sample i uses seed + i.")] = None,
    schema: Annotated[Path | None, typer.Option(help="JSON schema file the output must satisfy.")] = None,
    category: Annotated[str, typer.Option(help="Token-accounting category.")] = "execute",
    timeout: Annotated[
        float | None, typer.Option(help="Per-request timeout in seconds.", rich_help_panel=opt.MODELS)
    ] = None,
    retries: Annotated[
        int, typer.Option(help="Retries on 429/5xx/connection errors (openai).", rich_help_panel=opt.MODELS)
    ] = 3,
    concurrency: opt.Concurrency = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither read nor write the response cache.", rich_help_panel=opt.MODELS)
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print completions and usage as JSON.")] = False,
) -> None:
    """Send one prompt through a backend and print the completions with their token usage."""
    if prompt == "-":
        prompt = sys.stdin.read()
    config = _generate_config(temperature, top_p, max_tokens, stop, seed, schema)
    with open_llm(
        backend,
        cache=not no_cache,
        config=config,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        timeout_s=timeout,
        max_retries=retries,
        concurrency=concurrency,
    ) as llm:
        completions = llm.generate(prompt, category=category, n=n, system=system)
        _show(llm, completions, as_json)
