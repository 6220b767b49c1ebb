"""What every route of `orchrm serve` shares: the body limits, the token check and the locked scorer."""

from __future__ import annotations

import hmac
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from .. import safejson
from .model import RewardModel

#: Request bodies: a plan nests a handful of levels, so 32 is generous; the size is bounded by max_body_bytes.
BODY_LIMITS = safejson.Limits(max_chars=None, max_depth=32, max_number_chars=100)


@dataclass(frozen=True)
class ServerContext:
    """What a protocol route needs from the server, so that it answers under the same limits as /score."""

    score: Callable[[Sequence[tuple[str, str]]], list[float]]  # (question, plan text) -> raw RM scores
    read_json: Callable[[Request], Awaitable[Any]]  # the body under max_body_bytes and safejson (413 / 422)
    authorize: Callable[[Request], None]  # 401 without the bearer token, when one is configured
    max_items: int
    max_item_chars: int
    max_body_bytes: int


RouteFactory = Callable[[ServerContext], APIRouter]


def unprocessable(exc: ValidationError) -> HTTPException:
    """A 422 naming the first fields a request got wrong."""
    return HTTPException(422, [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()[:20]])


def declared_size_limit(max_body_bytes: int) -> Callable[[Request, Any], Awaitable[Any]]:
    """HTTP middleware: 413 before reading a body whose Content-Length is over the limit."""

    async def limit_body(request: Request, call_next: Any) -> Any:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
            return JSONResponse(
                {"detail": f"request body of {declared} bytes exceeds the limit of {max_body_bytes}"}, status_code=413
            )
        return await call_next(request)

    return limit_body


def bearer_check(token: str | None) -> Callable[[Request], None]:
    """A FastAPI dependency: 401 unless the request carries `Authorization: Bearer <token>` (none: anyone)."""

    def authorize(request: Request) -> None:
        if token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    return authorize


def json_reader(max_body_bytes: int) -> Callable[[Request], Awaitable[Any]]:
    """The body read under `max_body_bytes` (413) and parsed by safejson (422)."""

    async def read_json(request: Request) -> Any:
        body = await _read_body(request, max_body_bytes)
        try:
            return safejson.loads(body, BODY_LIMITS)
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


def locked_scorer(model: RewardModel, batch_size: int) -> Callable[[Sequence[tuple[str, str]]], list[float]]:
    """(question, plan text) pairs rendered and scored, one forward pass at a time: torch already uses every core."""
    lock = threading.Lock()

    def score_texts(items: Sequence[tuple[str, str]]) -> list[float]:
        from ..pairs.render import render_plan, render_question

        rendered = [(render_question(q), render_plan(p)) for q, p in items]
        with lock:
            return model.score_rendered(rendered, batch_size=batch_size)

    return score_texts
