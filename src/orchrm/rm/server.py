"""`orchrm serve`: the reward model over HTTP, for RL trainers that want a remote reward.

    GET  /health  -> {"status": "ok"}
    GET  /info    -> the model card (backbone, tasks, metrics, weights sha256) and the server's limits
    POST /score   -> {"items": [{"question": str, "plan": object | str}, ...]}
                  <- {"scores": [float, ...]}   (one per item, same order; higher is a better plan)

A plan is a plan object (`{"agents": [...], "edges": [...]}`) or the orchestrator's raw text. Requests
larger than `max_body_bytes` (counted as the body streams in, chunked or not), with more than `max_items`
items or with an item over `max_item_chars` get 413; bodies that are not JSON, or JSON that safejson refuses
(nested past its depth, huge numbers, lone surrogates, NaN, bytes that are not UTF-8), or of the wrong shape
get 422; with a token configured, requests without `Authorization: Bearer <token>` get 401. No body gives 500.

Other wire protocols (an RL framework's own) are added as `routes`: each gets a `ServerContext` holding the
guarded body reader, the token check and the locked scorer, so every route keeps the same limits.
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from .. import safejson
from .model import RewardModel

#: Request bodies: a plan nests a handful of levels, so 32 is generous; the size is bounded by max_body_bytes.
BODY_LIMITS = safejson.Limits(max_chars=None, max_depth=32, max_number_chars=100)


class ScoreItem(BaseModel):
    question: str = Field(min_length=1)
    plan: dict[str, Any] | str


class ScoreRequest(BaseModel):
    items: list[ScoreItem] = Field(min_length=1)


class ScoreResponse(BaseModel):
    scores: list[float]


@dataclass(frozen=True)
class ServerContext:
    """What a protocol route needs from the server, so that it answers under the same limits as /score."""

    score: Callable[[Sequence[tuple[str, str]]], list[float]]  # (question, plan text) -> raw RM scores
    read_json: Callable[[Request], Awaitable[Any]]  # the body under max_body_bytes and safejson (413 / 422)
    authorize: Callable[[Request], None]  # 401 without the bearer token, when one is configured
    max_items: int
    max_item_chars: int


RouteFactory = Callable[[ServerContext], APIRouter]


def unprocessable(exc: ValidationError) -> HTTPException:
    """A 422 naming the first fields a request got wrong."""
    return HTTPException(422, [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()[:20]])


def create_app(
    model: RewardModel,
    *,
    token: str | None = None,
    max_items: int = 256,
    max_body_bytes: int = 2_000_000,
    max_item_chars: int = 100_000,
    batch_size: int = 64,
    routes: Sequence[RouteFactory] = (),
) -> FastAPI:
    app = FastAPI(title="orchrm reward model", version=model.card.orchrm_version)
    lock = threading.Lock()  # one forward pass at a time: torch already uses every core

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Any) -> Any:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
            return JSONResponse(
                {"detail": f"request body of {declared} bytes exceeds the limit of {max_body_bytes}"}, status_code=413
            )
        return await call_next(request)

    def authorize(request: Request) -> None:
        if token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/info", dependencies=[Depends(authorize)])
    def info() -> dict[str, Any]:
        card = model.card.model_dump(mode="json")
        card["metrics"] = {k: v for k, v in card["metrics"].items() if k != "history"}
        limits = {"max_items": max_items, "max_body_bytes": max_body_bytes, "max_item_chars": max_item_chars}
        return {"card": card, "limits": limits}

    async def read_body(request: Request) -> bytes:
        # Counted chunk by chunk: a chunked body declares no Content-Length for the middleware to check.
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body_bytes:
                raise HTTPException(413, f"request body exceeds the limit of {max_body_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def parse(raw: Any) -> ScoreRequest:
        try:
            request = ScoreRequest.model_validate(raw)
        except ValidationError as exc:
            raise unprocessable(exc) from None
        if len(request.items) > max_items:
            raise HTTPException(413, f"{len(request.items)} items exceed the limit of {max_items} per request")
        return request

    def plan_text(item: ScoreItem, index: int) -> str:
        text = item.plan if isinstance(item.plan, str) else json.dumps(item.plan)
        if len(item.question) + len(text) > max_item_chars:
            raise HTTPException(413, f"item {index} has {len(item.question) + len(text)} characters, at most {max_item_chars}")
        return text

    def score_texts(items: Sequence[tuple[str, str]]) -> list[float]:
        from ..pairs.render import render_plan, render_question

        rendered = [(render_question(q), render_plan(p)) for q, p in items]
        with lock:
            return model.score_rendered(rendered, batch_size=batch_size)

    def score_items(request: ScoreRequest) -> ScoreResponse:
        texts = [plan_text(it, i) for i, it in enumerate(request.items)]  # every item checked before any work
        return ScoreResponse(scores=score_texts([(it.question, text) for it, text in zip(request.items, texts)]))

    async def read_json(request: Request) -> Any:
        body = await read_body(request)
        try:
            return safejson.loads(body, BODY_LIMITS)
        except safejson.UnsafeJSONError as exc:
            raise HTTPException(422, f"request body refused: {exc.reason} (json {exc.rule})") from None

    # The body is read here, not by FastAPI: its parser recurses on nested JSON (400 on deep bodies) and
    # accepts what safejson refuses.
    @app.post(
        "/score", response_model=ScoreResponse, dependencies=[Depends(authorize)],
        openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": ScoreRequest.model_json_schema()}}}},
    )
    async def score(request: Request) -> ScoreResponse:
        raw = await read_json(request)
        return await run_in_threadpool(lambda: score_items(parse(raw)))

    context = ServerContext(score=score_texts, read_json=read_json, authorize=authorize, max_items=max_items,
                            max_item_chars=max_item_chars)  # fmt: skip
    for make in routes:
        app.include_router(make(context))
    return app


def serve(model: RewardModel, host: str = "127.0.0.1", port: int = 8765, **options: Any) -> None:
    import uvicorn

    uvicorn.run(create_app(model, **options), host=host, port=port, log_level="info")
