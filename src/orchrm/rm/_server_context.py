"""What every route of `orchrm serve` shares: the body limits and timeout, the content type, the token check and
the fair scorer."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import safejson
from ..mas.plans import Plan
from ._fair_scorer import FairScorer, QueueFull
from .model import RewardModel
from .reward import RewardContract

#: Request bodies: a plan nests a handful of levels, so 32 is generous; the size is bounded by max_body_bytes.
BODY_LIMITS = safejson.Limits(max_chars=None, max_depth=32, max_number_chars=100)

#: uvicorn's own logger: a server message lands in the server's log, one line, in its format.
log = logging.getLogger("uvicorn.error")


@dataclass(frozen=True)
class ServerContext:
    """What a protocol route needs from the server, so that it answers under the same limits as /score."""

    score: Callable[
        [Sequence[tuple[str, str | Plan]]], list[float]
    ]  # (question, plan) -> raw RM scores (503: the scorer is stuck)
    read_json: Callable[[Request], Awaitable[Any]]  # the body: 415 / 408 / 413 / 422, see json_reader
    authorize: Callable[[Request], None]  # 401 without the bearer token, when one is configured
    max_items: int
    max_item_chars: int
    max_body_bytes: int
    contract: RewardContract = RewardContract()  # what counts as a plan, and the reward a protocol route pays
    queue: Callable[[], dict[str, int]] = lambda: {}  # the scoring queue's depth and limits, for /health


RouteFactory = Callable[[ServerContext], APIRouter]


def unprocessable(exc: ValidationError) -> HTTPException:
    """A 422 naming the first fields a request got wrong."""
    return HTTPException(422, [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()[:20]])


class DeclaredSizeLimit:
    """ASGI middleware: 413 before reading a body whose Content-Length is over the limit. (Plain ASGI, not
    Starlette's BaseHTTPMiddleware, which turns a client that disconnects mid-body into a traceback.)"""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app, self.max_body_bytes = app, max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            declared = dict(scope["headers"]).get(b"content-length")
            if declared is not None and safejson.bounded_int(declared, high=self.max_body_bytes) is None:
                size = f"{len(declared)} digits" if len(declared) > 20 else f"{declared.decode('latin-1')} bytes"
                detail = f"request body of {size} exceeds the limit of {self.max_body_bytes} bytes"
                await JSONResponse({"detail": detail}, status_code=413)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def bearer_check(token: str | None) -> Callable[[Request], None]:
    """A FastAPI dependency: 401 unless the request carries `Authorization: Bearer <token>` (none: anyone)."""

    def authorize(request: Request) -> None:
        if token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    return authorize


def json_reader(max_body_bytes: int, body_timeout_s: float) -> Callable[[Request], Awaitable[Any]]:
    """The body: 415 unless sent as JSON, 408 unless it arrives within `body_timeout_s`, 413 over
    `max_body_bytes`, 422 when safejson refuses it. A client that hangs up mid-body is one log line."""

    async def read_json(request: Request) -> Any:
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise HTTPException(415, f"send the body as application/json, not {media_type or 'no content type'}")
        try:
            async with asyncio.timeout(body_timeout_s):
                body = await _read_body(request, max_body_bytes)
        except TimeoutError:
            raise HTTPException(
                408, f"request body not received within {body_timeout_s:g} s", headers={"Connection": "close"}
            ) from None
        except ClientDisconnect:
            client = f"{request.client.host}:{request.client.port}" if request.client else "a client"
            log.info(
                "%s - %s %s: client disconnected before its body was read", client, request.method, request.url.path
            )
            raise HTTPException(499, "client disconnected") from None  # nothing is sent: the client is gone
        try:  # a worker thread: parsing a body near the size limit is long enough that the event loop would wait
            return await run_in_threadpool(safejson.loads, body, BODY_LIMITS)
        except safejson.UnsafeJSONError as exc:
            raise HTTPException(422, f"request body refused: {exc.reason} (json {exc.rule})") from None

    return read_json


async def _read_body(request: Request, max_body_bytes: int) -> bytes:
    # Counted chunk by chunk: a chunked body declares no Content-Length for the middleware to check.
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body_bytes:
            raise HTTPException(413, f"request body exceeds the limit of {max_body_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class QueueLimits:
    """How the model is shared: forward passes of at most `pass_tokens` padded tokens (least-served requests
    first, one item of each in turn), at most `max_requests` requests and `max_items` items waiting. A request
    that finds the queue full is held until there is room, in arrival order (`FairScorer`): a 503 with
    Retry-After only when no pass was taken or finished for `stall_s` (the model is stuck), so a client that
    does not wait out Retry-After (OpenRLHF's own) is not refused while the model makes progress.

    Sized for a training step's burst: verl's reward manager scores a step's batch from a thread pool (64
    threads here), OpenRLHF sends one sample a request from every rollout worker (1,024 at once by default:
    bench/openrlhf_client.py). Starlette runs at most 40 requests' scoring at once; the rest wait for a thread,
    not in this queue, so the threads bound how many are held and what they hold in memory."""

    pass_tokens: int = 256  # one item at MiniLM's 256 tokens, or several short ones (bench/server_fair.py)
    max_requests: int = 512
    max_items: int = 2048
    stall_s: float = 60.0  # a pass on CPU takes seconds (a 0.5B decoder, 256 tokens); a minute without one is stuck


def fair_scorer(
    model: RewardModel, limits: QueueLimits
) -> tuple[Callable[[Sequence[tuple[str, str | Plan]]], list[float]], FairScorer]:
    """(question, plan) pairs rendered in the caller's thread, then scored on the model's thread in fair
    passes (`FairScorer`, returned too: its depth is reported by /health); a stuck scorer is a 503."""
    from ..pairs.render import render_question

    def tokens(item: tuple[str, str]) -> int:  # a token covers at least one byte; +4 for the special tokens
        return min(model.card.max_length, len(item[0].encode()) + len(item[1].encode()) + 4)

    scorer = FairScorer(
        lambda items: model.score_rendered(items, batch_size=len(items)),
        pass_tokens=limits.pass_tokens,
        tokens=tokens,
        max_requests=limits.max_requests,
        max_items=limits.max_items,
        stall_s=limits.stall_s,
    )

    def score_texts(items: Sequence[tuple[str, str]]) -> list[float]:
        rendered = [(render_question(q), model.render(p)) for q, p in items]
        try:
            return scorer.score(rendered)
        except QueueFull as exc:
            raise HTTPException(503, f"scoring queue: {exc}", headers={"Retry-After": "1"}) from None

    return score_texts, scorer
