"""Several OpenAI-compatible endpoints serving one model (a vLLM or SGLang fleet) behind one backend.

Each request goes to the least-loaded healthy endpoint (requests in flight over its concurrency limit).
An endpoint that cannot be reached, times out, answers 404/408/409/429/5xx after its retries, or answers
something that is not a chat completion is failed over: the request moves to the next endpoint, the
endpoint rests for a cool-down, and the failure is recorded with its reason in `failovers` (the CLI prints
a summary). A request error that every endpoint would repeat (context overflow, 400, 401) is raised at
once. Only when every endpoint has failed for one request is it an error: one `BackendUnreachable` line
naming each endpoint's reason.

The cache identity is the first endpoint's (`model@first-url`): which endpoint answered never changes a
cache key, and a run that adds endpoints to a one-server setup replays that server's answers.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    BackendHTTPError,
    BackendTimeout,
    BackendUnreachable,
    ConfigError,
    LLMError,
    MalformedResponse,
)
from .backend import Backend
from .openai_backend import OpenAIBackend
from .types import Completion, GenerateConfig, Message

#: HTTP statuses that say "this endpoint cannot serve now" rather than "this request is wrong".
FAILOVER_STATUSES = frozenset({404, 408, 409, 429})
#: Seconds a failed endpoint rests before it is tried again (doubling per consecutive failure, capped).
COOL_DOWN_S = 5.0
MAX_COOL_DOWN_S = 60.0


@dataclass(frozen=True)
class Failover:
    """One request moved off an endpoint."""

    endpoint: str
    reason: str  # "unreachable", "timeout", "http 503", "malformed"
    message: str
    at: float


@dataclass
class _Endpoint:
    backend: OpenAIBackend
    limit: int
    in_flight: int = 0
    calls: int = 0
    failures: int = 0
    streak: int = 0
    down_until: float = 0.0
    _sems: dict[int, asyncio.Semaphore] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.backend.base_url

    def semaphore(self) -> asyncio.Semaphore:
        loop_id = id(asyncio.get_running_loop())
        sem = self._sems.get(loop_id)
        if sem is None:
            sem = self._sems[loop_id] = asyncio.Semaphore(self.limit)
        return sem

    def load(self) -> float:
        return self.in_flight / self.limit


def failover_reason(exc: LLMError) -> str | None:
    """Why `exc` moves a request to another endpoint, or None when every endpoint would fail it the same."""
    if isinstance(exc, BackendUnreachable):
        return "unreachable"
    if isinstance(exc, BackendTimeout):
        return "timeout"
    if isinstance(exc, MalformedResponse):
        return "malformed"
    if isinstance(exc, BackendHTTPError) and (exc.status >= 500 or exc.status in FAILOVER_STATUSES):
        return f"http {exc.status}"
    return None


class FleetBackend(Backend):
    """Chat completions from several servers that serve the same model, `concurrency` requests each."""

    kind = "openai"  # the same family as one server: a fleet's answers are that model's answers

    def __init__(
        self,
        base_urls: list[str],
        model: str | None = None,
        *,
        concurrency: int = 8,
        max_retries: int = 1,
        cool_down_s: float = COOL_DOWN_S,
        **options: Any,
    ) -> None:
        urls = [u.strip().rstrip("/") for u in base_urls if u.strip()]
        if len(urls) < 2:
            raise ConfigError("a fleet needs at least two base URLs", hint="use the openai backend for one server")
        if len(set(urls)) != len(urls):
            raise ConfigError(f"a base URL is listed twice: {', '.join(urls)}")
        self.model = model
        self.cool_down_s = cool_down_s
        # Each endpoint retries little: a dead one should hand its request on in seconds, not minutes.
        self.endpoints = [
            _Endpoint(OpenAIBackend(u, model, concurrency=concurrency, max_retries=max_retries, **options), concurrency)
            for u in urls
        ]
        self.failovers: list[Failover] = []

    # ------------------------------------------------------------------ identity

    @property
    def model_id(self) -> str:
        if self.model is None:
            self._set_model(self._served_model())
        return f"{self.model}@{self.endpoints[0].url}"

    @property
    def max_concurrency(self) -> int:
        return sum(ep.limit for ep in self.endpoints)

    @property
    def where(self) -> str:
        return ",".join(ep.url for ep in self.endpoints)

    def _served_model(self) -> str | None:
        """The model name from the first endpoint that can say it (a sync read, before any request)."""
        reasons = []
        for ep in self.endpoints:
            try:
                ep.backend.model_id  # noqa: B018 - asks the server which model it serves
            except LLMError as exc:
                self._record(ep, exc, failover_reason(exc) or "error")
                reasons.append(f"{ep.url}: {exc.message}")
                continue
            return ep.backend.model
        raise self._all_down(reasons)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self.model is not None:
            return
        reasons = []
        for ep in self._by_health():
            try:
                await ep.backend.start()
            except LLMError as exc:
                self._record(ep, exc, failover_reason(exc) or "error")
                reasons.append(f"{ep.url}: {exc.message}")
                continue
            self._set_model(ep.backend.model)
            return
        raise self._all_down(reasons)

    def _set_model(self, model: str | None) -> None:
        self.model = model
        for ep in self.endpoints:
            ep.backend.model = model  # every endpoint is asked for the same model

    async def ping(self) -> None:
        """Every endpoint at once; fine while one answers (the others are marked down with their reason)."""
        results = await asyncio.gather(*(ep.backend.ping() for ep in self.endpoints), return_exceptions=True)
        reasons = []
        for ep, res in zip(self.endpoints, results, strict=True):
            if isinstance(res, LLMError):
                self._record(ep, res, failover_reason(res) or "error")
                reasons.append(f"{ep.url}: {res.message}")
            elif isinstance(res, BaseException):
                raise res
            elif self.model is None:
                self._set_model(ep.backend.model)
        if len(reasons) == len(self.endpoints):
            raise self._all_down(reasons)

    async def aclose(self) -> None:
        for ep in self.endpoints:
            await ep.backend.aclose()

    # ------------------------------------------------------------------ routing

    def _by_health(self) -> list[_Endpoint]:
        """Endpoints not resting first, each group least-loaded first (ties: listed order)."""
        now = time.monotonic()
        return sorted(self.endpoints, key=lambda ep: (ep.down_until > now, ep.load()))

    async def complete(self, messages: list[Message], config: GenerateConfig, seed: int | None) -> Completion:
        await self.start()
        reasons: list[str] = []
        tried: set[int] = set()
        while True:
            candidates = [ep for ep in self._by_health() if id(ep) not in tried]
            if not candidates:
                raise self._all_down(reasons)
            ep = candidates[0]
            tried.add(id(ep))
            ep.in_flight += 1
            try:
                async with ep.semaphore():
                    completion = await ep.backend.complete(messages, config, seed)
            except LLMError as exc:
                reason = failover_reason(exc)
                if reason is None:
                    raise
                self._record(ep, exc, reason)
                reasons.append(f"{ep.url}: {exc.message}")
                continue
            finally:
                ep.in_flight -= 1
            ep.calls += 1
            ep.streak = 0
            ep.down_until = 0.0
            return completion

    def _record(self, ep: _Endpoint, exc: LLMError, reason: str) -> None:
        ep.failures += 1
        ep.streak += 1
        ep.down_until = time.monotonic() + min(self.cool_down_s * 2 ** (ep.streak - 1), MAX_COOL_DOWN_S)
        self.failovers.append(Failover(ep.url, reason, " ".join(exc.message.split()), time.time()))

    def _all_down(self, reasons: list[str]) -> BackendUnreachable:
        detail = "; ".join(" ".join(r.split()) for r in reasons) or "no endpoint answered"
        return BackendUnreachable(
            f"all {len(self.endpoints)} endpoints failed: {detail}",
            hint="are the servers running, and are those their URLs (ending in /v1)?",
        )

    # ------------------------------------------------------------------ reporting

    def summary(self) -> dict[str, dict[str, object]]:
        """Per endpoint: calls answered, failures, and the failure reasons counted."""
        out: dict[str, dict[str, object]] = {}
        for ep in self.endpoints:
            reasons = Counter(f.reason for f in self.failovers if f.endpoint == ep.url)
            out[ep.url] = {"calls": ep.calls, "failures": ep.failures, "reasons": dict(reasons)}
        return out

    def summary_line(self) -> str | None:
        """One line about failovers for the end of a run, or None when there were none."""
        if not self.failovers:
            return None
        parts = []
        for url, row in self.summary().items():
            if row["failures"]:
                why = ", ".join(f"{k} x{v}" for k, v in row["reasons"].items())  # type: ignore[union-attr]
                parts.append(f"{url} failed {row['failures']} time(s) ({why})")
        return f"fleet failovers: {'; '.join(parts)}"
