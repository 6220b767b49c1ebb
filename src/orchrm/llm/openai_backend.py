"""Any OpenAI-compatible chat-completions server: vLLM, SGLang, llama.cpp's server, OpenAI itself.

This is the only code path that talks HTTP to a model; the local backend points it at its own server.
Retries with backoff on 429/5xx/connection errors and timeouts come from the `openai` client.

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

from ..errors import (
    BackendHTTPError,
    BackendTimeout,
    BackendUnreachable,
    ConfigError,
    ContextOverflow,
    MalformedResponse,
)
from .backend import Backend
from .types import Completion, GenerateConfig, Message, ToolCall, Usage

#: Connections per `openai` client; a backend with more concurrency opens ceil(concurrency / this) clients.
SHARD_CONNECTIONS = 8

_OVERFLOW_MARKERS = ("context length", "context size", "context_length", "exceed_context", "maximum context", "too long")


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
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base URL {base_url!r} must start with http:// or https://")
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
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

    @property
    def model_id(self) -> str:
        if self._identity is not None:
            return self._identity
        if self.model is None:
            # Read before any request (a CLI recording its run config): ask the server now, synchronously.
            try:
                with openai.OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s,
                                   max_retries=self.max_retries) as client:  # fmt: skip
                    page = client.models.list()
            except openai.OpenAIError as exc:
                raise self._translate(exc) from exc
            self.model = self._first_model(page)
        return f"{self.model}@{self.base_url}"

    @property
    def max_concurrency(self) -> int:
        return self.concurrency

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
                    base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=self.max_retries,
                    http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=self.timeout_s),
                )  # fmt: skip
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
        """Ask the server which model it serves when none was named (vLLM and llama.cpp serve one)."""
        if self.model is not None:
            return
        try:
            page = await self._client().models.list()
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc
        self.model = self._first_model(page)

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
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in messages],
            "temperature": config.temperature,
            "top_p": config.top_p,
            "max_tokens": config.max_tokens,
            "n": 1,
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
        try:
            resp = await self._create(kwargs)
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc
        except (json.JSONDecodeError, ValueError, TypeError) as exc:
            raise MalformedResponse(f"{self.base_url} returned a body that is not a chat completion: {exc}") from exc
        return self._parse(resp)

    def _parse(self, resp: Any) -> Completion:
        try:
            choice = resp.choices[0]
            text = choice.message.content
            usage = resp.usage
            prompt_tokens, completion_tokens = int(usage.prompt_tokens), int(usage.completion_tokens)
        except (AttributeError, IndexError, TypeError, ValueError) as exc:
            raise MalformedResponse(
                f"{self.base_url} returned a completion without choices, message or usage ({type(exc).__name__}: {exc})",
                hint="is this an OpenAI-compatible chat-completions endpoint?",
            ) from exc
        calls = _tool_calls(choice.message, self.base_url)
        if not isinstance(text, str):
            if not calls:
                raise MalformedResponse(f"{self.base_url} returned a completion with no text content")
            text = ""
        return Completion(
            text=text,
            finish_reason=str(choice.finish_reason or "stop"),
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
            tool_calls=calls or None,
        )

    def _translate(self, exc: openai.OpenAIError, *, timeout_s: float | None = None, retries: int | None = None) -> Exception:
        where = self.base_url
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        retries = self.max_retries if retries is None else retries
        if isinstance(exc, openai.APITimeoutError):
            return BackendTimeout(
                f"{where} did not answer within {timeout_s:g}s (tried {retries + 1} times)",
                hint="raise the timeout or lower the load on the server",
            )
        if isinstance(exc, openai.APIConnectionError):
            return BackendUnreachable(
                f"cannot reach {where} (tried {retries + 1} times): {exc.__cause__ or exc}",
                hint="is the server running, and is that its URL (ending in /v1)?",
            )
        if isinstance(exc, openai.APIResponseValidationError):
            return MalformedResponse(f"{where} returned a response that is not valid OpenAI JSON: {exc}")
        if isinstance(exc, openai.APIStatusError):
            detail = _error_text(exc)
            status = exc.status_code
            if status == 400 and any(m in detail.lower() for m in _OVERFLOW_MARKERS):
                return ContextOverflow(
                    f"the prompt does not fit the model's context window: {detail}",
                    hint="shorten the prompt, lower max_tokens, or serve the model with a larger context",
                )
            hints = {
                401: "set the API key in the environment variable the backend reads (OPENAI_API_KEY by default)",
                403: "the API key lacks access to this model",
                404: "check the model name and that the base URL ends in /v1",
                429: "the server kept rate-limiting after all retries; lower the concurrency",
            }
            hint = hints.get(status, "the server's retries ran out" if status >= 500 else None)
            return BackendHTTPError(f"{where} answered HTTP {status}: {detail}", status=status, hint=hint)
        return MalformedResponse(f"{where}: {type(exc).__name__}: {exc}")

    async def aclose(self) -> None:
        clients, self._clients, self._in_flight = self._clients, {}, {}
        for client in (c for shards in clients.values() for c in shards):
            try:
                await client.close()
            except RuntimeError:
                # The loop that owned this client is gone; its connections went with it.
                continue


def _tool_calls(message: Any, where: str) -> list[ToolCall]:
    """The message's function tool calls; arguments that are not a JSON object are a malformed response."""
    out = []
    for call in getattr(message, "tool_calls", None) or []:
        fn = getattr(call, "function", None)
        try:
            args = json.loads(fn.arguments or "{}")
        except (AttributeError, json.JSONDecodeError, TypeError) as exc:
            raise MalformedResponse(f"{where} returned a tool call whose arguments are not JSON: {exc}") from exc
        if not isinstance(args, dict):
            raise MalformedResponse(f"{where} returned a tool call whose arguments are not a JSON object")
        out.append(ToolCall(name=str(fn.name), arguments=args, id=getattr(call, "id", None)))
    return out


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return " ".join(str(err["message"]).split())
    text = getattr(exc.response, "text", "") or str(exc)
    return " ".join(text.split())[:300]
