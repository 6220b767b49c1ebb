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
guarded body reader, the token check and the locked scorer, so every route keeps the same limits. orchrm's
own protocol is one such router (_score_routes.py); the context is built in _server_context.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI

from ._score_routes import ScoreItem, ScoreRequest, ScoreResponse, score_routes
from ._server_context import (
    BODY_LIMITS,
    RouteFactory,
    ServerContext,
    bearer_check,
    declared_size_limit,
    json_reader,
    locked_scorer,
    unprocessable,
)
from .model import RewardModel

__all__ = [
    "BODY_LIMITS",
    "RouteFactory",
    "ScoreItem",
    "ScoreRequest",
    "ScoreResponse",
    "ServerContext",
    "create_app",
    "serve",
    "unprocessable",
]


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
    """The app: orchrm's own routes, then each of `routes`, all under one body limit, token and scorer."""
    app = FastAPI(title="orchrm reward model", version=model.card.orchrm_version)
    app.middleware("http")(declared_size_limit(max_body_bytes))
    context = ServerContext(score=locked_scorer(model, batch_size), read_json=json_reader(max_body_bytes),
                            authorize=bearer_check(token), max_items=max_items, max_item_chars=max_item_chars,
                            max_body_bytes=max_body_bytes)  # fmt: skip
    app.include_router(score_routes(context, model))
    for make in routes:
        app.include_router(make(context))
    return app


def serve(model: RewardModel, host: str = "127.0.0.1", port: int = 8765, **options: Any) -> None:
    import uvicorn

    uvicorn.run(create_app(model, **options), host=host, port=port, log_level="info")
