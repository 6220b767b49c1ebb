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
import warnings
from typing import Any

import httpx
import openai

from .. import safejson
from ..errors import (
    BackendHTTPError,
    BackendTimeout,
    BackendUnreachable,
    ConfigError,
    ContextOverflow,
    MalformedResponse,
)
from .backend import Backend
from .grouped import DIALECTS, consecutive, parse_choices
from .llamacpp_routes import OVERFLOW_MARKERS, LlamaCppRoutes
from .types import Completion, GenerateConfig, Message, ToolCall, Usage

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
        if dialect is not None and dialect not in DIALECTS:
            raise ConfigError(f"unknown server dialect {dialect!r}", hint=f"use one of {', '.join(DIALECTS)}")
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

    @property
    def max_group(self) -> int:
        if self.group_refused or self.dialect is None:
            return 1
        if self.dialect == "llama.cpp":
            # llama-server starts an n-completion request only when n slots are free at once.
            return min(self.concurrency, self._slots or self.concurrency)
        return self.max_n

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
            await self._learn_dialect(page)

    async def _learn_dialect(self, page: Any) -> None:
        owners = {getattr(m, "owned_by", None) for m in getattr(page, "data", None) or []}
        if "llamacpp" not in owners:
            self.dialect = "openai"
            return
        self._slots = await self._native.slots()
        self.dialect = "llama.cpp"

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
        return self._parse(resp)

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
            if exc.status not in (400, 422):
                raise
            singles = await super().complete_group(messages, config, seeds)
            # One sample at a time went through where n did not: the server does not take `n`.
            self.group_refused = True
            warnings.warn(f"{self.base_url} refused a request for {len(seeds)} completions ({exc}); "
                          "asking once per sample from now on", stacklevel=2)  # fmt: skip
            return [c.model_copy(update={"group": 1}) for c in singles]
        return parse_choices(resp, len(seeds), self.base_url, self._parse_choice)

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

    def _parse(self, resp: Any) -> Completion:
        try:
            choice = resp.choices[0]
            usage = resp.usage
            prompt_tokens, completion_tokens = int(usage.prompt_tokens), int(usage.completion_tokens)
            details = getattr(usage, "prompt_tokens_details", None)
            cached = min(int(getattr(details, "cached_tokens", 0) or 0), prompt_tokens)
        except (AttributeError, IndexError, TypeError, ValueError) as exc:
            raise MalformedResponse(
                f"{self.base_url} returned a completion without choices, message or usage ({type(exc).__name__}: {exc})",
                hint="is this an OpenAI-compatible chat-completions endpoint?",
            ) from exc
        c = self._parse_choice(choice)
        return c.model_copy(update={"usage": Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                                                   cached_prompt_tokens=max(cached, 0))})  # fmt: skip

    def _parse_choice(self, choice: Any) -> Completion:
        """One choice's text, finish reason and tool calls (usage is the caller's: it belongs to the request)."""
        try:
            text = choice.message.content
            finish = str(choice.finish_reason or "stop")
        except AttributeError as exc:
            raise MalformedResponse(f"{self.base_url} returned a choice without a message ({exc})") from exc
        calls = _tool_calls(choice.message, self.base_url)
        if not isinstance(text, str):
            if not calls:
                raise MalformedResponse(f"{self.base_url} returned a completion with no text content")
            text = ""
        return Completion(text=text, finish_reason=finish, usage=Usage(prompt_tokens=0, completion_tokens=0),
                          tool_calls=calls or None)  # fmt: skip

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
            if status == 400 and any(m in detail.lower() for m in OVERFLOW_MARKERS):
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
        await self._native.aclose()
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
            args = safejson.loads(fn.arguments or "{}")
        except (AttributeError, safejson.UnsafeJSONError, TypeError) as exc:
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
