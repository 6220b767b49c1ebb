"""The embedded default: a GGUF model served by a managed llama-server, spoken to over its OpenAI API.

All requests go through `OpenAIBackend`, the same code path as any served model; this class only owns
the model file and the server process (and brings the server back if it dies).
"""

from __future__ import annotations

import asyncio
import sys
import threading

from ..errors import BackendUnreachable
from .backend import Backend
from .models import DEFAULT_MODEL, REGISTRY, ModelFile, resolve_model
from .openai_backend import OpenAIBackend
from .server import LlamaServer, ServerConfig
from .server_build import Log, ensure_llama_server
from .types import Completion, GenerateConfig, Message


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class LocalBackend(Backend):
    """An embedded model (registry name or .gguf path) on a llama-server this object starts and stops."""

    kind = "local"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        server: ServerConfig | None = None,
        timeout_s: float = 600.0,
        log: Log = _stderr,
    ) -> None:
        self.model_name = model
        self.server_config = server or ServerConfig()
        self.timeout_s = timeout_s
        self._log = log
        self._file: ModelFile | None = None
        self._server: LlamaServer | None = None
        self._http: OpenAIBackend | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        if self._file is not None:
            return f"gguf:{self._file.sha256}"
        if self.model_name in REGISTRY:
            return f"gguf:{REGISTRY[self.model_name].sha256}"
        raise RuntimeError("model id of a GGUF path is known only after start()")

    @property
    def max_concurrency(self) -> int:
        return self.server_config.parallel

    @property
    def where(self) -> str:
        return f"{self.model_name} (embedded, on its own llama-server)"

    @property
    def server(self) -> LlamaServer | None:
        return self._server

    async def start(self) -> None:
        if self._http is None or self._server is None or not self._server.alive():
            await asyncio.to_thread(self._start_sync)

    def _start_sync(self) -> None:
        with self._lock:
            if self._file is None:
                self._file = resolve_model(self.model_name)  # sha256-verified before anything loads it
            if self._server is None:
                self._server = LlamaServer(ensure_llama_server(self._log), self._file, self.server_config)
            if self._http is not None and self._server.alive():
                return
            url = self._server.ensure_running()
            stale, self._http = self._http, OpenAIBackend(
                url,
                model=self._file.name,
                identity=self.model_id,
                timeout_s=self.timeout_s,
                max_retries=1,
                concurrency=self.server_config.parallel,
            )
            if stale is not None and self._server.restarts:
                self._log(f"llama-server for {self._file.name} died and was restarted ({self._server.restarts}x)")

    async def complete(self, messages: list[Message], config: GenerateConfig, seed: int | None) -> Completion:
        await self.start()
        assert self._http is not None
        try:
            return await self._http.complete(messages, config, seed)
        except BackendUnreachable:
            if self._server is not None and self._server.alive():
                raise
        # The server died under this request: bring it back and try once more.
        await self.start()
        return await self._http.complete(messages, config, seed)

    async def aclose(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()
        if self._server is not None:
            self._server.stop()
