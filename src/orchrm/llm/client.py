"""`LLM`: the one interface all of orchrm generates through.

It draws `n` samples from a backend (concurrently, bounded by the backend's concurrency), serves repeats
from the response cache, checks structured output against its schema, and records every completion's
usage in a token ledger under the caller's category.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import jsonschema

from ..errors import ConfigError, SchemaViolation
from .accounting import TokenLedger
from .backend import Backend
from .cache import ResponseCache
from .types import Completion, GenerateConfig, Message, cache_key, messages_from


class LLM:
    """A backend plus cache plus ledger. Async-first; `generate` is the sync convenience."""

    def __init__(
        self,
        backend: Backend,
        *,
        cache: ResponseCache | None = None,
        ledger: TokenLedger | None = None,
        config: GenerateConfig | None = None,
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.ledger = ledger if ledger is not None else TokenLedger()
        self.config = config or GenerateConfig()
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._sync_loop: asyncio.AbstractEventLoop | None = None

    async def agenerate(
        self,
        prompt: str | list[Message],
        *,
        category: str,
        n: int = 1,
        system: str | None = None,
        config: GenerateConfig | None = None,
        use_cache: bool = True,
        **overrides: Any,
    ) -> list[Completion]:
        """Sample `n` completions for one prompt; their usage is recorded under `category`.

        `overrides` (temperature=..., max_tokens=...) stack on `config`, which stacks on the LLM's own.
        """
        if n < 1:
            raise ConfigError(f"n must be at least 1, got {n}")
        if not category:
            raise ConfigError("every generation needs a token-accounting category (plan, execute, verify, train, ...)")
        await self.backend.start()
        messages = messages_from(prompt, system)
        cfg = (config or self.config).merge(**overrides)
        if cfg.json_schema is not None:
            _check_schema_itself(cfg.json_schema)
        results = await asyncio.gather(
            *(self._one(messages, cfg, i, use_cache) for i in range(n)), return_exceptions=True
        )
        done = [r for r in results if isinstance(r, Completion)]
        self.ledger.record(category, self.backend.kind, self.backend.model_id, done)
        failures = [r for r in results if not isinstance(r, Completion)]
        if failures:
            raise failures[0]
        for c in done:
            _check_structured(c, cfg)
        return done

    def generate(self, prompt: str | list[Message], *, category: str, **kwargs: Any) -> list[Completion]:
        """Sync form of `agenerate`, for scripts and the CLI (not for use inside a running event loop)."""
        if _loop_running():
            raise ConfigError("LLM.generate was called inside an event loop: await LLM.agenerate instead")
        if self._sync_loop is None or self._sync_loop.is_closed():
            self._sync_loop = asyncio.new_event_loop()
        return self._sync_loop.run_until_complete(self.agenerate(prompt, category=category, **kwargs))

    async def _one(self, messages: list[Message], cfg: GenerateConfig, index: int, use_cache: bool) -> Completion:
        key = cache_key(self.backend.kind, self.backend.model_id, messages, cfg, index)
        if use_cache and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit.model_copy(update={"sample_index": index})
        async with self._semaphore():
            start = time.perf_counter()
            completion = await self.backend.complete(messages, cfg, cfg.sample_seed(index))
            latency = time.perf_counter() - start
        completion = completion.model_copy(update={"sample_index": index, "latency_s": latency, "cached": False})
        # Only answers that satisfy the request are worth replaying; a schema violation is retried next run.
        if self.cache is not None and _violation(completion, cfg) is None:
            self.cache.put(key, self.backend.kind, self.backend.model_id, completion)
        return completion

    def _semaphore(self) -> asyncio.Semaphore:
        loop_id = id(asyncio.get_running_loop())
        sem = self._semaphores.get(loop_id)
        if sem is None:
            sem = self._semaphores[loop_id] = asyncio.Semaphore(self.backend.max_concurrency)
        return sem

    async def aping(self) -> None:
        """Check that the backend can answer (a server is up, a model file loads); raises when it cannot."""
        await self.backend.ping()

    async def aclose(self) -> None:
        """Stop the backend (and its server, for `local`) and close the response cache."""
        try:
            await self.backend.aclose()
        finally:
            if self._sync_loop is not None and not self._sync_loop.is_running():
                self._sync_loop.close()  # left by `generate`; this coroutine runs on another loop
            if self.cache is not None:
                self.cache.close()

    def close(self) -> None:
        """Sync form of `aclose`, for scripts and the CLI. Inside a running event loop it cannot wait for the
        backend to stop, so it refuses and says what to use there, leaving everything open for that."""
        if _loop_running():
            raise ConfigError(
                "LLM.close was called inside a running event loop (e.g. leaving `with open_llm(...)` in async code)",
                hint="use `async with open_llm(...) as llm:` or `await llm.aclose()` there",
            )
        loop = self._sync_loop if self._sync_loop is not None and not self._sync_loop.is_closed() else asyncio.new_event_loop()
        try:
            loop.run_until_complete(self.aclose())
        finally:
            loop.close()

    def __enter__(self) -> LLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> LLM:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _check_schema_itself(schema: dict[str, Any]) -> None:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigError(f"the JSON schema for structured output is invalid: {exc.message}") from exc


def _violation(c: Completion, cfg: GenerateConfig) -> str | None:
    """Why a completion fails its schema, or None when it passes (or no schema was asked for)."""
    if cfg.json_schema is None:
        return None
    if c.finish_reason == "length":
        return f"output was cut off at max_tokens={cfg.max_tokens} before the JSON closed"
    try:
        value = json.loads(c.text)
    except json.JSONDecodeError as exc:
        return f"output is not valid JSON ({exc.msg} at char {exc.pos})"
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(cfg.json_schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return f"output violates the schema at {where}: {error.message}"
    return None


def _check_structured(c: Completion, cfg: GenerateConfig) -> None:
    reason = _violation(c, cfg)
    if reason is not None:
        hint = "raise max_tokens" if c.finish_reason == "length" else "the server may not enforce JSON schemas"
        raise SchemaViolation(reason, text=c.text, hint=hint, usage=c.usage)

