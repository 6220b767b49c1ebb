"""Opening an `LLM` by backend name: what the CLI and config files use."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from ..paths import responses_db
from .accounting import TokenLedger
from .backend import Backend
from .cache import ResponseCache
from .client import LLM
from .local import LocalBackend
from .models import DEFAULT_MODEL
from .openai_backend import OpenAIBackend
from .server import ServerConfig
from .types import GenerateConfig

#: Backends a user can select. The scripted backend is for unit tests and deliberately absent.
BACKENDS = ("local", "openai")


def create_backend(
    backend: str = "local",
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    timeout_s: float | None = None,
    max_retries: int = 3,
    concurrency: int | None = None,
) -> Backend:
    if backend == "local":
        if base_url is not None:
            raise ConfigError("--base-url is for the openai backend; the local backend starts its own server")
        server = ServerConfig(parallel=concurrency) if concurrency else ServerConfig()
        return LocalBackend(model or DEFAULT_MODEL, server=server, timeout_s=timeout_s or 600.0)
    if backend == "openai":
        if not base_url:
            raise ConfigError("the openai backend needs a base URL", hint="pass --base-url http://host:port/v1")
        return OpenAIBackend(
            base_url,
            model,
            api_key_env=api_key_env,
            timeout_s=timeout_s or 120.0,
            max_retries=max_retries,
            concurrency=concurrency or 8,
        )
    raise ConfigError(f"unknown backend {backend!r}", hint=f"use one of: {', '.join(BACKENDS)}")


def open_llm(
    backend: str = "local",
    *,
    cache: bool | str | Path = True,
    ledger: TokenLedger | None = None,
    config: GenerateConfig | None = None,
    **backend_options: object,
) -> LLM:
    """An `LLM` over the named backend, with the response cache on by default (a path picks its file)."""
    store = None
    if cache is not False:
        store = ResponseCache(responses_db() if cache is True else Path(cache))
    return LLM(create_backend(backend, **backend_options), cache=store, ledger=ledger, config=config)  # type: ignore[arg-type]
