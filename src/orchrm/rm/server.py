"""`orchrm serve`: the reward model over HTTP, for RL trainers that want a remote reward.

    GET  /health  -> {"status": "ok"}
    GET  /info    -> the model card (backbone, tasks, metrics, weights sha256) and the server's limits
    POST /score   -> {"items": [{"question": str, "plan": object | str}, ...]}
                  <- {"scores": [float, ...]}   (one per item, same order; higher is a better plan)

A plan is a plan object (`{"agents": [...], "edges": [...]}`) or the orchestrator's raw text. Requests
larger than `max_body_bytes` or with more than `max_items` items get 413; malformed bodies 422; with a
token configured, requests without `Authorization: Bearer <token>` get 401.
"""

from __future__ import annotations

import hmac
import json
import threading
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from .model import RewardModel


class ScoreItem(BaseModel):
    question: str = Field(min_length=1)
    plan: dict[str, Any] | str


class ScoreRequest(BaseModel):
    items: list[ScoreItem] = Field(min_length=1)


class ScoreResponse(BaseModel):
    scores: list[float]


def create_app(
    model: RewardModel,
    *,
    token: str | None = None,
    max_items: int = 256,
    max_body_bytes: int = 2_000_000,
    batch_size: int = 64,
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
        return {"card": card, "limits": {"max_items": max_items, "max_body_bytes": max_body_bytes}}

    @app.post("/score", response_model=ScoreResponse, dependencies=[Depends(authorize)])
    def score(body: ScoreRequest) -> ScoreResponse:
        if len(body.items) > max_items:
            raise HTTPException(413, f"{len(body.items)} items exceed the limit of {max_items} per request")
        from ..pairs.render import render_plan, render_question

        rendered = [
            (render_question(it.question), render_plan(it.plan if isinstance(it.plan, str) else json.dumps(it.plan)))
            for it in body.items
        ]
        with lock:
            scores = model.score_rendered(rendered, batch_size=batch_size)
        return ScoreResponse(scores=scores)

    return app


def serve(model: RewardModel, host: str = "127.0.0.1", port: int = 8765, **limits: Any) -> None:
    import uvicorn

    uvicorn.run(create_app(model, **limits), host=host, port=port, log_level="info")
