"""Opening an `LLM` by backend name: what the CLI and config files use.

A run may put the orchestrator (which writes plans) and the sub-agents (which execute them) on different
models: `open_llms` opens both, sharing one token ledger and one response cache, and returns the same `LLM`
twice when both name the same model, so the default stays one model and one server.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import BackendUnreachable, ConfigError, LLMError, ServerError
from ..paths import responses_db
from .accounting import TokenLedger
from .backend import Backend
from .cache import ResponseCache
from .client import LLM
from .fleet import FleetBackend
from .local import LocalBackend
from .models import DEFAULT_MODEL, AdapterFile
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
    adapter: AdapterFile | None = None,
) -> Backend:
    if backend == "local":
        if base_url is not None:
            raise ConfigError("--base-url is for the openai backend; the local backend starts its own server")
        server = ServerConfig(parallel=concurrency) if concurrency else ServerConfig()
        return LocalBackend(model or DEFAULT_MODEL, server=server, timeout_s=timeout_s or 600.0, adapter=adapter)
    if adapter is not None:
        raise adapter_needs_local()
    if backend == "openai":
        if not base_url:
            raise ConfigError("the openai backend needs a base URL", hint="pass --base-url http://host:port/v1")
        urls = split_base_urls(base_url)
        if len(urls) > 1:
            # A fleet: `concurrency` is per endpoint; each endpoint retries once, then the request moves on.
            return FleetBackend(
                urls,
                model,
                api_key_env=api_key_env,
                timeout_s=timeout_s or 120.0,
                max_retries=min(max_retries, 1),
                concurrency=concurrency or 8,
            )
        return OpenAIBackend(
            base_url,
            model,
            api_key_env=api_key_env,
            timeout_s=timeout_s or 120.0,
            max_retries=max_retries,
            concurrency=concurrency or 8,
        )
    raise ConfigError(f"unknown backend {backend!r}", hint=f"use one of: {', '.join(BACKENDS)}")


def adapter_needs_local() -> ConfigError:
    """The error for an orchestrator adapter on a served backend (raised before any conversion by the CLI)."""
    return ConfigError(
        "--orchestrator-adapter is for the local backend",
        hint="a served model loads its LoRA adapters itself (vLLM --lora-modules): name the adapter with --model",
    )


def split_base_urls(base_url: str) -> list[str]:
    """The endpoints of a `--base-url` value: one URL, or several separated by commas (a fleet)."""
    return [u.strip() for u in base_url.split(",") if u.strip()]


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
    model_api = create_backend(backend, **backend_options)  # type: ignore[arg-type]
    return LLM(model_api, cache=store, ledger=ledger, config=config)


def _same_target(backend: str, model: str | None, base_url: str | None) -> tuple[str, str | None, str | None]:
    # The local backend's unnamed model is the default one: `--agent-model <default>` is the same model.
    return (backend, model or DEFAULT_MODEL if backend == "local" else model, base_url)


def open_llms(
    backend: str = "local",
    *,
    model: str | None = None,
    base_url: str | None = None,
    agent_backend: str | None = None,
    agent_model: str | None = None,
    agent_base_url: str | None = None,
    orchestrator_adapter: AdapterFile | None = None,
    cache: bool | str | Path = True,
    ledger: TokenLedger | None = None,
    config: GenerateConfig | None = None,
    **backend_options: object,
) -> tuple[LLM, LLM]:
    """(orchestrator, agent) LLMs. Agent options left out are the orchestrator's: `agent_model` alone is a
    second model on the same backend (and server URL); `agent_base_url` alone, the model that server serves;
    `agent_backend` alone, that backend's default model. Timeouts, retries, key and concurrency are shared.
    When nothing differs both are the same object, or with an `orchestrator_adapter` (a trained orchestrator
    on the local backend) the same server's base model. Close them with `close_llms`."""
    orchestrator = open_llm(
        backend,
        cache=cache,
        ledger=ledger,
        config=config,
        model=model,
        base_url=base_url,
        adapter=orchestrator_adapter,
        **backend_options,
    )
    try:
        agent = open_agent_llm(
            orchestrator,
            agent_backend,
            model=agent_model,
            base_url=agent_base_url,
            same_as=(backend, model, base_url),
            **backend_options,
        )
    except BaseException:
        orchestrator.close()
        raise
    return orchestrator, agent


def open_agent_llm(
    orchestrator: LLM,
    backend: str | None = None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    same_as: tuple[str, str | None, str | None] | None = None,
    **backend_options: object,
) -> LLM:
    """The LLM the sub-agents run on: `orchestrator` itself when no agent option is given or they name the
    orchestrator's model (`same_as`: its backend, model, base URL), else a second LLM that records into the
    orchestrator's ledger and replays from its response cache (the cache keys by model, so no answer is
    shared between them)."""
    if backend is None and model is None and base_url is None:
        return _base_model(orchestrator)
    own = same_as or (orchestrator.backend.kind, None, None)
    kind = backend or own[0]
    # Same backend, no URL of its own: the agent model is served where the orchestrator's is; on that same
    # server, no model of its own is the orchestrator's model (elsewhere, whatever that server serves).
    url = base_url if base_url is not None or kind != own[0] else own[2]
    if model is None and (kind, url) == own[::2]:
        model = own[1]
    if same_as is not None and _same_target(kind, model, url) == _same_target(*own):
        return _base_model(orchestrator)
    created = create_backend(kind, model=model, base_url=url, **backend_options)  # type: ignore[arg-type]
    return LLM(created, cache=orchestrator.cache, ledger=orchestrator.ledger, config=orchestrator.config)


def _base_model(orchestrator: LLM) -> LLM:
    """The orchestrator's LLM for the sub-agents: itself, or for an adapted local model its base view (the
    sub-agents are the base model; only plans come from the trained adapter)."""
    backend = orchestrator.backend
    if not isinstance(backend, LocalBackend) or backend.adapter is None:
        return orchestrator
    return LLM(backend.base_view(), cache=orchestrator.cache, ledger=orchestrator.ledger, config=orchestrator.config)


def close_llms(*llms: LLM) -> None:
    """Close each distinct LLM once (the orchestrator and agent LLM may be one object)."""
    for llm in {id(x): x for x in llms}.values():
        llm.close()


async def ensure_reachable(llm: LLM, role: str) -> None:
    """Fail in one line that names the role ("orchestrator", "agent") and where its model answers, before
    any work starts, when the model cannot answer: a dead server would otherwise surface as failed plans."""
    try:
        await llm.aping()
    except (LLMError, ServerError) as exc:
        message = f"{role} model at {llm.backend.where} is not reachable: {exc.message}"
        raise BackendUnreachable(message, hint=exc.hint, detail=exc.detail) from exc
