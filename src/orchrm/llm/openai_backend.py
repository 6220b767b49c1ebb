"""Any OpenAI-compatible chat-completions server: vLLM, SGLang, llama.cpp's server, OpenAI itself.

This is the only code path that talks HTTP to a model; the local backend points it at its own server.
Retries with backoff on 429/5xx/connection errors and timeouts come from the `openai` client. What a reply
or an error means is `openai_replies.py`; how the server takes n completions of one prompt is `dialects.py`.

Requests are spread over several `openai` clients of at most `SHARD_CONNECTIONS` connections each: the
httpx connection pool scans every connection for every queued request, so one pool of 256 connections
spends more CPU per call than the call itself (bench/executor_overhead.py measured it).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import httpx
import openai

from ..errors import BackendHTTPError, ConfigError, MalformedResponse
from .backend import Backend
from .dialects import after_refusal, check_dialect, group_limit, learn_dialect, refuses_n
from .grouped import consecutive, parse_choices
from .llamacpp_routes import LlamaCppRoutes
from .openai_replies import parse_choice, parse_completion, translate_error
from .types import Completion, GenerateConfig, Message

#: Connections per `openai` client; a backend with more concurrency opens ceil(concurrency / this) clients.
SHARD_CONNECTIONS = 8


class OpenAIBackend(Backend):
    """Chat completions from a server at `base_url` (ending in /v1)."""

    kind = "openai"

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        max_retries: int = 3,
        concurrency: int = 8,
        identity: str | None = None,
        extra_body: dict[str, Any] | None = None,
        dialect: str | None = None,
        max_n: int = 8,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base URL {base_url!r} must start with http:// or https://")
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
        check_dialect(dialect)
        if max_n < 1:
            raise ConfigError(f"max_n must be at least 1, got {max_n}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get(api_key_env, "") or "none"
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.concurrency = concurrency
        # The cache identity of the weights behind this server; the local backend passes the GGUF's sha256.
        self._identity = identity
        # Server-specific fields sent with every request (the local backend's LoRA scales).
        self.extra_body = extra_body
        self._clients: dict[int, list[openai.AsyncOpenAI]] = {}
        self._in_flight: dict[int, list[int]] = {}
        # How the server answers a request for n completions (None: learned from its /models page).
        self.dialect = dialect
        self.max_n = max_n
        self._slots: int | None = None  # a llama-server's slot count (its /props), when learned
        self.group_refused = False  # the server refused `n`: one request per sample from then on
        self._native = LlamaCppRoutes(self.base_url, self.api_key, timeout_s, extra_body)

    @property
    def model_id(self) -> str:
        if self._identity is not None:
            return self._identity
        if self.model is None:
            # Read before any request (a CLI recording its run config): ask the server now, synchronously.
            try:
                with openai.OpenAI(
                    base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=self.max_retries
                ) as client:
                    page = client.models.list()
            except openai.OpenAIError as exc:
                raise self._translate(exc) from exc
            self.model = self._first_model(page)
        return f"{self.model}@{self.base_url}"

    @property
    def max_concurrency(self) -> int:
        return self.concurrency

    @property
    def max_group(self) -> int:
        return group_limit(
            self.dialect, refused=self.group_refused, slots=self._slots, concurrency=self.concurrency, max_n=self.max_n
        )

    def _shards(self) -> tuple[list[openai.AsyncOpenAI], list[int]]:
        # An httpx client belongs to the event loop that first used it; keep one set per loop.
        loop_id = id(asyncio.get_running_loop())
        shards = self._clients.get(loop_id)
        if shards is None:
            n = -(-self.concurrency // SHARD_CONNECTIONS)
            size = -(-self.concurrency // n)
            limits = httpx.Limits(max_connections=size, max_keepalive_connections=size, keepalive_expiry=30.0)
            shards = self._clients[loop_id] = [
                openai.AsyncOpenAI(
                    base_url=self.base_url,
                    api_key=self.api_key,
                    timeout=self.timeout_s,
                    max_retries=self.max_retries,
                    http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=self.timeout_s),
                )
                for _ in range(n)
            ]
            self._in_flight[loop_id] = [0] * n
        return shards, self._in_flight[loop_id]

    def _client(self) -> openai.AsyncOpenAI:
        return self._shards()[0][0]

    async def _create(self, kwargs: dict[str, Any]) -> Any:
        """One chat completion on the client with the fewest requests in flight."""
        shards, in_flight = self._shards()
        i = min(range(len(shards)), key=in_flight.__getitem__) if len(shards) > 1 else 0
        in_flight[i] += 1
        try:
            return await shards[i].chat.completions.create(**kwargs)
        finally:
            in_flight[i] -= 1

    async def start(self) -> None:
        """Ask the server which model it serves when none was named (vLLM and llama.cpp serve one), and
        whether it is a llama-server (its n-completion replies need its own route to be counted)."""
        if self.model is not None and self.dialect is not None:
            return
        try:
            page = await self._client().models.list()
        except openai.OpenAIError as exc:
            if self.model is None:
                raise self._translate(exc) from exc
            self.dialect = "openai"  # a named model on a server without /models: plain OpenAI `n`
            return
        if self.model is None:
            self.model = self._first_model(page)
        if self.dialect is None:
            self.dialect, self._slots = await learn_dialect(page, self._native)

    @property
    def where(self) -> str:
        return self.base_url

    async def ping(self) -> None:
        """One GET /models, with few retries and a short timeout: a dead server should fail in seconds, not
        after the long per-request timeout a busy CPU needs. Learns the served model when none was named."""
        timeout, retries = min(self.timeout_s, 30.0), min(self.max_retries, 1)
        try:
            async with openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=timeout, max_retries=retries
            ) as client:
                page = await client.models.list()
        except openai.OpenAIError as exc:
            raise self._translate(exc, timeout_s=timeout, retries=retries) from exc
        if self.model is None:
            self.model = self._first_model(page)

    def _first_model(self, page: Any) -> str:
        """The first model in the server's /models page."""
        try:
            names = [m.id for m in page.data]
        except (ValueError, TypeError, AttributeError) as exc:
            raise MalformedResponse(f"{self.base_url}/models returned an unreadable model list: {exc}") from exc
        if not names:
            raise ConfigError(f"{self.base_url} serves no models", hint="pass --model")
        return str(names[0])

    async def complete(self, messages: list[Message], config: GenerateConfig, seed: int | None) -> Completion:
        await self.start()
        resp = await self._chat(self._kwargs(messages, config, seed, 1))
        return parse_completion(resp, self.base_url)

    async def complete_group(
        self, messages: list[Message], config: GenerateConfig, seeds: list[int | None]
    ) -> list[Completion]:
        """n completions of one prompt in one request (`n_cmpl` on llama-server, `n` elsewhere). A server that
        refuses `n` is asked once per sample instead, from then on, and says so once (a warning)."""
        await self.start()
        if len(seeds) == 1 or self.max_group == 1 or config.tools or not consecutive(seeds):
            return await super().complete_group(messages, config, seeds)
        try:
            if self.dialect == "llama.cpp":
                return await self._native.group(messages, config, seeds)
            resp = await self._chat(self._kwargs(messages, config, seeds[0], len(seeds)))
        except BackendHTTPError as exc:
            if not refuses_n(exc):
                raise
            singles = await super().complete_group(messages, config, seeds)
            # One sample at a time went through where n did not: the server does not take `n`.
            self.group_refused = True
            return after_refusal(singles, self.base_url, exc)
        return parse_choices(resp, len(seeds), self.base_url, lambda choice: parse_choice(choice, self.base_url))

    async def _chat(self, kwargs: dict[str, Any]) -> Any:
        try:
            return await self._create(kwargs)
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc
        except (json.JSONDecodeError, ValueError, TypeError) as exc:
            raise MalformedResponse(f"{self.base_url} returned a body that is not a chat completion: {exc}") from exc

    def _kwargs(self, messages: list[Message], config: GenerateConfig, seed: int | None, n: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in messages],
            "temperature": config.temperature,
            "top_p": config.top_p,
            "max_tokens": config.max_tokens,
            "n": n,
        }
        if config.stop:
            kwargs["stop"] = list(config.stop)
        if seed is not None:
            kwargs["seed"] = seed
        if config.json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": config.json_schema, "strict": True},
            }
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        if config.tools:
            kwargs["tools"] = config.tools
            if config.tool_choice is not None:
                kwargs["tool_choice"] = config.tool_choice
        return kwargs

    def _translate(
        self, exc: openai.OpenAIError, *, timeout_s: float | None = None, retries: int | None = None
    ) -> Exception:
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        retries = self.max_retries if retries is None else retries
        return translate_error(exc, self.base_url, timeout_s=timeout_s, retries=retries)

    async def aclose(self) -> None:
        await self._native.aclose()
        clients, self._clients, self._in_flight = self._clients, {}, {}
        for client in (c for shards in clients.values() for c in shards):
            try:
                await client.close()
            except RuntimeError:
                # The loop that owned this client is gone; its connections went with it.
                continue
