"""The embedded default: a GGUF model served by a managed llama-server, spoken to over its OpenAI API.

All requests go through `OpenAIBackend`, the same code path as any served model; this class only owns
the model file and the server process (and brings the server back if it dies).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from ..errors import BackendUnreachable
from .backend import Backend
from .models import DEFAULT_MODEL, REGISTRY, AdapterFile, ModelFile, resolve_model
from .openai_backend import OpenAIBackend
from .server import LlamaServer, ServerConfig
from .server_build import Log, ensure_llama_server
from .types import Completion, GenerateConfig, Message

T = TypeVar("T")


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class LocalBackend(Backend):
    """An embedded model (registry name or .gguf path) on a llama-server this object starts and stops.

    With an `adapter` (a trained orchestrator's LoRA as GGUF) the server loads it and every request asks
    for it at scale 1; `base_view()` is the same server's bare model (scale 0 on every request) for the
    sub-agents, so an adapted orchestrator and its base-model agents share one process. Scales are sent on
    every request because a request that names none is served with whatever scale its slot last had."""

    kind = "local"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        server: ServerConfig | None = None,
        timeout_s: float = 600.0,
        log: Log = _stderr,
        adapter: AdapterFile | None = None,
    ) -> None:
        self.model_name = model
        self.server_config = server or ServerConfig()
        self.timeout_s = timeout_s
        self.adapter = adapter
        self._log = log
        self._file: ModelFile | None = None
        self._server: LlamaServer | None = None
        self._http: OpenAIBackend | None = None
        self._lock = threading.Lock()
        self._host: LocalBackend | None = None  # the backend whose server a base view shares
        self._lora_scale: float | None = 1.0 if adapter is not None else None

    def base_view(self) -> LocalBackend:
        """This server's model without the adapter (self when there is none); closing it leaves the server up."""
        if self.adapter is None:
            return self
        view = LocalBackend(self.model_name, server=self.server_config, timeout_s=self.timeout_s, log=self._log)
        view._host, view._lora_scale = self, 0.0
        return view

    @property
    def _owner(self) -> LocalBackend:
        return self._host or self

    @property
    def model_id(self) -> str:
        owner = self._owner
        if owner._file is not None:
            base = f"gguf:{owner._file.sha256}"
        elif owner.model_name in REGISTRY:
            base = f"gguf:{REGISTRY[owner.model_name].sha256}"
        else:
            raise RuntimeError("model id of a GGUF path is known only after start()")
        return f"{base}+lora:{self.adapter.sha256}" if self.adapter is not None else base

    @property
    def display_name(self) -> str:
        """The registry name (a GGUF path: its file name), with the adapter's name when one is loaded."""
        name = self.model_name if self.model_name in REGISTRY else Path(self.model_name).name
        return f"{name}+{self.adapter.name}" if self.adapter is not None else name

    @property
    def max_concurrency(self) -> int:
        return self.server_config.parallel

    @property
    def max_group(self) -> int:
        return self.server_config.parallel

    @property
    def where(self) -> str:
        on = f" with adapter {self.adapter.name}" if self.adapter is not None else ""
        return f"{self.model_name}{on} (embedded, on its own llama-server)"

    @property
    def server(self) -> LlamaServer | None:
        return self._owner._server

    async def start(self) -> None:
        server = self.server
        if self._http is None or server is None or not server.alive() or self._http.base_url != server.url.rstrip("/"):
            await asyncio.to_thread(self._start_sync)

    def _start_sync(self) -> None:
        owner = self._owner
        with owner._lock:  # the shared server; each backend (the owner, a base view) keeps its own client
            if owner._file is None:
                owner._file = resolve_model(owner.model_name)  # sha256-verified before anything loads it
            if owner._server is None:
                lora = owner.adapter.path if owner.adapter is not None else None
                owner._server = LlamaServer(
                    ensure_llama_server(owner._log), owner._file, owner.server_config, lora=lora
                )
            alive = owner._server.alive()
            url = owner._server.ensure_running()
        with self._lock:
            if self._http is not None and alive and self._http.base_url == url.rstrip("/"):
                return
            extra = {"lora": [{"id": 0, "scale": self._lora_scale}]} if self._lora_scale is not None else None
            stale, self._http = (
                self._http,
                OpenAIBackend(
                    url,
                    model=owner._file.name,
                    identity=self.model_id,
                    timeout_s=self.timeout_s,
                    max_retries=1,
                    concurrency=self.server_config.parallel,
                    extra_body=extra,
                    dialect="llama.cpp",
                ),
            )
            if stale is not None and owner._server.restarts:
                self._log(f"llama-server for {owner._file.name} died and was restarted ({owner._server.restarts}x)")

    async def complete(self, messages: list[Message], config: GenerateConfig, seed: int | None) -> Completion:
        return await self._surviving(lambda http: http.complete(messages, config, seed))

    async def complete_group(
        self, messages: list[Message], config: GenerateConfig, seeds: list[int | None]
    ) -> list[Completion]:
        return await self._surviving(lambda http: http.complete_group(messages, config, seeds))

    async def _surviving(self, request: Callable[[OpenAIBackend], Awaitable[T]]) -> T:
        """`request` on the server; if the server died under it, bring it back and try once more."""
        await self.start()
        assert self._http is not None
        try:
            return await request(self._http)
        except BackendUnreachable:
            if self.server is not None and self.server.alive():
                raise
        await self.start()
        return await request(self._http)

    async def aclose(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()
        if self._host is None and self._server is not None:
            self._server.stop()
