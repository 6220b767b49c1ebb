"""`orchrm serve`: the reward model over HTTP, for RL trainers that want a remote reward.

    GET  /health  -> {"status": "ok"}
    GET  /info    -> the model card (backbone, tasks, metrics, weights sha256) and the server's limits
    POST /score   -> {"items": [{"question": str, "plan": object | str}, ...]}
                  <- {"scores": [float, ...]}   (one per item, same order; higher is a better plan)

A plan is a plan object (`{"agents": [...], "edges": [...]}`) or the orchestrator's raw text. A body must be
sent as `application/json` (else 415). Requests larger than `max_body_bytes` (counted as the body streams
in, chunked or not), with more than `max_items` items or with an item over `max_item_chars` get 413; bodies
that are not JSON, or JSON that safejson refuses (nested past its depth, huge numbers, lone surrogates, NaN,
bytes that are not UTF-8), or of the wrong shape get 422; with a token configured, requests without
`Authorization: Bearer <token>` get 401. No body gives 500.

Slow or heavy clients cannot stall it: a request's headers must arrive within `header_timeout_s` and its
body within `body_timeout_s` (408, connection closed); a client that hangs up mid-body is one log line. The
model runs on one thread of its own, in passes of at most `QueueLimits.pass_tokens` padded tokens taken
from the least-served waiting requests first, one item of each in turn, so a 1-item request is scored in the
next pass whatever is queued before it; at most `QueueLimits.max_requests` requests and `max_items` items
wait, and more are held until there is room (back-pressure): a 503 with Retry-After only when the model is
stuck (no pass for `QueueLimits.stall_s`). A request sent again is answered from the last scores kept. Bodies are parsed and checked in worker threads, off the event loop,
and `serve` leaves them and the event loop one core that torch does not use.

Other wire protocols (an RL framework's own) are added as `routes`: each gets a `ServerContext` holding the
guarded body reader, the token check and the fair scorer, so every route keeps the same limits. orchrm's
own protocol is one such router (_score_routes.py); the context is built in _server_context.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI

from ._http import header_timeout_protocol
from ._score_routes import ScoreItem, ScoreRequest, ScoreResponse, score_routes
from ._server_context import (
    BODY_LIMITS,
    DeclaredSizeLimit,
    QueueLimits,
    RouteFactory,
    ServerContext,
    bearer_check,
    fair_scorer,
    json_reader,
    unprocessable,
)
from .model import RewardModel
from .reward import RewardContract

__all__ = [
    "BODY_LIMITS",
    "QueueLimits",
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
    body_timeout_s: float = 10.0,
    queue: QueueLimits = QueueLimits(),
    routes: Sequence[RouteFactory] = (),
    contract: RewardContract = RewardContract(),
) -> FastAPI:
    """The app: orchrm's own routes, then each of `routes`, all under one body limit, token, scorer and reward
    contract (what counts as a plan: `/score` answers null for text with none)."""
    app = FastAPI(title="orchrm reward model", version=model.card.orchrm_version)
    app.add_middleware(DeclaredSizeLimit, max_body_bytes=max_body_bytes)
    score, scorer = fair_scorer(model, queue)

    def depth() -> dict[str, int]:
        requests, items, held = scorer.depth()
        limits = {"max_requests": queue.max_requests, "max_items": queue.max_items}
        return {"requests": requests, "items": items, "held": held, **limits}

    context = ServerContext(
        score=score,
        read_json=json_reader(max_body_bytes, body_timeout_s),
        authorize=bearer_check(token),
        max_items=max_items,
        max_item_chars=max_item_chars,
        max_body_bytes=max_body_bytes,
        contract=contract,
        queue=depth,
    )
    app.include_router(score_routes(context, model))
    for make in routes:
        app.include_router(make(context))
    return app


def serve(
    model: RewardModel,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    header_timeout_s: float = 10.0,
    torch_threads: int | None = None,
    **options: Any,
) -> None:
    """`create_app(model, **options)` under uvicorn, with request headers due within `header_timeout_s`.

    torch gets `torch_threads` threads, by default every core this process may use but one: the event loop,
    body parsing and rendering need the other (on 2 shared cores, torch on both made a pass up to 5 times
    slower while other threads ran)."""
    import torch
    import uvicorn

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    torch.set_num_threads(torch_threads or max(1, cores - 1))
    uvicorn.run(
        create_app(model, **options),
        host=host,
        port=port,
        log_level="info",
        http=header_timeout_protocol(header_timeout_s),
    )
