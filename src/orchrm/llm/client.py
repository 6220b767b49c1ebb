"""`LLM`: the one interface all of orchrm generates through.

It draws `n` samples from a backend (as one request where the backend can serve a group, else concurrently;
in flight never more than the backend's concurrency), serves repeats from the response cache (and a request
identical to one in flight from that one's answer: `inflight.py`), checks structured output against its schema,
and records every completion's usage in a token ledger under the caller's category.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from typing import Any

import jsonschema

from .. import safejson
from ..errors import ConfigError, MalformedResponse, SchemaViolation
from .accounting import TokenLedger
from .backend import Backend
from .cache import ResponseCache
from .inflight import InFlight
from .permits import Permits
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
        self._slots: dict[int, Permits] = {}
        self._inflight = InFlight()
        self._sync_loop: asyncio.AbstractEventLoop | None = None

    async def agenerate(
        self,
        prompt: str | list[Message],
        *,
        category: str,
        n: int = 1,
        indices: list[int] | None = None,
        system: str | None = None,
        config: GenerateConfig | None = None,
        use_cache: bool = True,
        strict: bool = True,
        **overrides: Any,
    ) -> list[Completion]:
        """Sample `n` completions for one prompt (or exactly the sample `indices`); their usage is recorded
        under `category`. Sample i is drawn with seed `config.seed + i` and cached under i.

        Samples missing from the cache go to the backend together, as few requests as it takes (one request
        reads the prompt once for all of them) where the backend can; a sample a group request did not
        return is asked for again on its own. `overrides` (temperature=..., max_tokens=...) stack on
        `config`, which stacks on the LLM's own. With `strict=False` completions that break the JSON schema
        are returned (check them with `violation`) instead of raising `SchemaViolation`.
        """
        if n < 1:
            raise ConfigError(f"n must be at least 1, got {n}")
        if not category:
            raise ConfigError("every generation needs a token-accounting category (plan, execute, verify, train, ...)")
        wanted = list(range(n)) if indices is None else list(indices)
        if not wanted or len(set(wanted)) != len(wanted) or min(wanted) < 0:
            raise ConfigError(f"sample indices must be distinct and non-negative, got {wanted}")
        await self.backend.start()
        messages = messages_from(prompt, system)
        cfg = (config or self.config).merge(**overrides)
        if cfg.json_schema is not None:
            _check_schema_itself(cfg.json_schema)
        keys = {i: cache_key(self.backend.kind, self.backend.model_id, messages, cfg, i) for i in wanted}
        got = self._cached(keys) if use_cache else {}
        missing = [i for i in wanted if i not in got]
        if use_cache and self.cache is not None:
            fresh, failures = await self._shared(messages, cfg, missing, keys)
        else:
            fresh, failures = await self._sample(messages, cfg, missing, keys)
        got.update(fresh)
        done = [got[i] for i in wanted if i in got]
        self.ledger.record(category, self.backend.kind, self.backend.model_id, done)
        if failures:
            raise failures[0]
        if strict:
            for c in done:
                _check_structured(c, cfg)
        return done

    def _cached(self, keys: dict[int, str]) -> dict[int, Completion]:
        """The samples the response cache holds, by index."""
        if self.cache is None:
            return {}
        hits = {i: self.cache.get(key) for i, key in keys.items()}
        return {i: hit.model_copy(update={"sample_index": i}) for i, hit in hits.items() if hit is not None}

    async def _shared(
        self, messages: list[Message], cfg: GenerateConfig, missing: list[int], keys: dict[int, str]
    ) -> tuple[dict[int, Completion], list[BaseException]]:
        """`_sample`, but a sample another caller is asking the backend for right now is taken from its answer
        (`InFlight`): an identical request in flight is sent once."""
        follow, lead = self._inflight.split({i: keys[i] for i in missing})
        got: dict[int, Completion] = {}
        failures: list[BaseException] = []
        try:
            if lead:
                got, failures = await self._sample(messages, cfg, lead, keys)
        finally:
            self._inflight.settle({i: keys[i] for i in lead}, got, lambda c: _replayable(c, cfg))
        shared = await self._inflight.answers(follow)
        got.update((i, c) for i, c in shared.items() if c is not None)
        again = [i for i, c in shared.items() if c is None]
        if again:  # the leader brought back nothing the cache keeps: ask as if it had never been asked
            more, more_failures = await self._sample(messages, cfg, again, keys)
            got.update(more)
            failures.extend(more_failures)
        return got, failures

    async def _sample(
        self, messages: list[Message], cfg: GenerateConfig, missing: list[int], keys: dict[int, str]
    ) -> tuple[dict[int, Completion], list[BaseException]]:
        """The `missing` samples from the backend, in as few requests as it takes, each cached as it comes;
        returns what came back and the failures of the rest."""
        results = await asyncio.gather(
            *(self._fresh(messages, cfg, chunk) for chunk in _chunks(missing, self._group_size(cfg))),
            return_exceptions=True,
        )
        got: dict[int, Completion] = {}
        failures: list[BaseException] = []
        for r in results:
            if isinstance(r, BaseException):
                failures.append(r)
                continue
            completions, errors = r
            failures.extend(errors)
            for c in completions:
                got[c.sample_index] = c
                if self.cache is not None and _replayable(c, cfg):
                    self.cache.put(keys[c.sample_index], self.backend.kind, self.backend.model_id, c)
        return got, failures

    def _group_size(self, cfg: GenerateConfig) -> int:
        # Tool calls and unseeded sampling go one request per sample (a group's samples need seed, seed + 1, ...).
        return 1 if cfg.tools else max(1, min(self.backend.max_group, self.backend.max_concurrency))

    async def _fresh(
        self, messages: list[Message], cfg: GenerateConfig, indices: list[int]
    ) -> tuple[list[Completion], list[BaseException]]:
        """Samples `indices` (consecutive) from the backend: one request for them all where it can, then one
        request each for any it did not return. Returns what came back and the failures of the rest."""
        got: dict[int, Completion] = {}
        if len(indices) > 1:
            async with self._permits().held(len(indices)):
                start = time.perf_counter()
                try:
                    group = await self.backend.complete_group(messages, cfg, [cfg.sample_seed(i) for i in indices])
                except MalformedResponse as exc:
                    # A reply whose completions cannot be told apart: ask for each one on its own rather than guess.
                    warnings.warn(f"{exc}; asking for the {len(indices)} samples one by one", stacklevel=2)
                    group = []
                latency = time.perf_counter() - start
            for c in group:
                if 0 <= c.sample_index < len(indices) and indices[c.sample_index] not in got:
                    i = indices[c.sample_index]
                    got[i] = c.model_copy(update={"sample_index": i, "latency_s": latency, "cached": False})
        rest = [i for i in indices if i not in got]
        singles = await asyncio.gather(*(self._one(messages, cfg, i) for i in rest), return_exceptions=True)
        errors = [r for r in singles if isinstance(r, BaseException)]
        got.update((c.sample_index, c) for c in singles if isinstance(c, Completion))
        return [got[i] for i in indices if i in got], errors

    async def _one(self, messages: list[Message], cfg: GenerateConfig, index: int) -> Completion:
        async with self._permits().held(1):
            start = time.perf_counter()
            completion = await self.backend.complete(messages, cfg, cfg.sample_seed(index))
            latency = time.perf_counter() - start
        return completion.model_copy(update={"sample_index": index, "latency_s": latency, "cached": False, "group": 1})

    def generate(self, prompt: str | list[Message], *, category: str, **kwargs: Any) -> list[Completion]:
        """Sync form of `agenerate`, for scripts and the CLI (not for use inside a running event loop)."""
        if _loop_running():
            raise ConfigError("LLM.generate was called inside an event loop: await LLM.agenerate instead")
        if self._sync_loop is None or self._sync_loop.is_closed():
            self._sync_loop = asyncio.new_event_loop()
        return self._sync_loop.run_until_complete(self.agenerate(prompt, category=category, **kwargs))

    def _permits(self) -> Permits:
        loop_id = id(asyncio.get_running_loop())
        permits = self._slots.get(loop_id)
        if permits is None:
            permits = self._slots[loop_id] = Permits(self.backend.max_concurrency)
        return permits

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
        loop = (
            self._sync_loop
            if self._sync_loop is not None and not self._sync_loop.is_closed()
            else asyncio.new_event_loop()
        )
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


def _chunks(indices: list[int], size: int) -> list[list[int]]:
    """Runs of consecutive indices, each cut to at most `size`: what one group request can sample."""
    out: list[list[int]] = []
    for i in indices:
        if out and out[-1][-1] == i - 1 and len(out[-1]) < size:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def violation(c: Completion, cfg: GenerateConfig) -> str | None:
    """Why a completion fails the request's JSON schema (cut off, not JSON, off-schema), or None when it
    passes (or no schema was asked for)."""
    if cfg.json_schema is None:
        return None
    if c.finish_reason == "length":
        return f"output was cut off at max_tokens={cfg.max_tokens} before the JSON closed"
    try:
        value = safejson.loads(c.text)
    except safejson.UnsafeJSONError as exc:
        # Model output is untrusted: deep nesting or a 5,000-digit number is refused like broken JSON.
        return f"output is not valid JSON ({exc.reason}, json {exc.rule})"
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(cfg.json_schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return f"output violates the schema at {where}: {error.message}"
    return None


def _replayable(c: Completion, cfg: GenerateConfig) -> bool:
    """Whether the cache keeps a sample: one that meets the request, and one cut off at `max_tokens` (a limit in
    its key: asked again it is cut again, and a rerun must see the plans the first run saw); not one that breaks
    the schema otherwise (the server may not enforce schemas), which is asked for again next run."""
    return c.finish_reason == "length" or violation(c, cfg) is None


def _check_structured(c: Completion, cfg: GenerateConfig) -> None:
    reason = violation(c, cfg)
    if reason is not None:
        hint = "raise max_tokens" if c.finish_reason == "length" else "the server may not enforce JSON schemas"
        raise SchemaViolation(reason, text=c.text, hint=hint, usage=c.usage)
