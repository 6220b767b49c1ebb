"""orchrm's own protocol: `GET /health`, `GET /info` and `POST /score` (see server.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from ..mas.plans import Plan, PlanError
from ._server_context import ServerContext, unprocessable
from .inputs import ScoreItem, ScoreRequest, plan_text
from .model import RewardModel

__all__ = ["ScoreItem", "ScoreRequest", "ScoreResponse", "score_routes"]


class ScoreResponse(BaseModel):
    """One raw RM score per item, in order; `null` where the item holds no valid plan, with the reason in
    `errors` at the same index (text with no plan is never given a model score)."""

    scores: list[float | None]
    errors: list[str | None]


def score_routes(context: ServerContext, model: RewardModel) -> APIRouter:
    """/health (no token), /info (the card without its training history, and the limits) and /score."""
    routes = APIRouter()

    # async: a sync route would wait for one of Starlette's 40 worker threads, all busy scoring in a burst, so the
    # queue's depth could not be read when it matters (depth() only takes the scorer's lock for a moment)
    @routes.get("/health")
    async def health() -> dict[str, Any]:
        """Up, and how deep the scoring queue is (requests and items waiting, the limits past which a request is
        held for room, and how many are held)."""
        return {"status": "ok", "queue": context.queue()}

    @routes.get("/info", dependencies=[Depends(context.authorize)])
    def info() -> dict[str, Any]:
        card = model.card.model_dump(mode="json")
        card["metrics"] = {k: v for k, v in card["metrics"].items() if k != "history"}
        limits = {
            "max_items": context.max_items,
            "max_body_bytes": context.max_body_bytes,
            "max_item_chars": context.max_item_chars,
        }
        return {"card": card, "limits": limits}

    # The body is read here, not by FastAPI: its parser recurses on nested JSON (400 on deep bodies) and
    # accepts what safejson refuses.
    @routes.post(
        "/score",
        response_model=ScoreResponse,
        dependencies=[Depends(context.authorize)],
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": ScoreRequest.model_json_schema()}},
            }
        },
    )
    async def score(request: Request) -> ScoreResponse:
        raw = await context.read_json(request)
        return await run_in_threadpool(lambda: _score_items(context, _parse(raw, context.max_items)))

    return routes


def _parse(raw: Any, max_items: int) -> ScoreRequest:
    try:
        request = ScoreRequest.model_validate(raw)
    except ValidationError as exc:
        raise unprocessable(exc) from None
    if len(request.items) > max_items:
        raise HTTPException(413, f"{len(request.items)} items exceed the limit of {max_items} per request")
    return request


def _plan_text(item: ScoreItem, index: int, max_item_chars: int) -> str:
    text = plan_text(item.plan)
    if len(item.question) + len(text) > max_item_chars:
        raise HTTPException(
            413, f"item {index} has {len(item.question) + len(text)} characters, at most {max_item_chars}"
        )
    return text


def _score_items(context: ServerContext, request: ScoreRequest) -> ScoreResponse:
    # every item checked before any work
    texts = [_plan_text(it, i, context.max_item_chars) for i, it in enumerate(request.items)]
    plans: list[Plan | str] = []
    for text in texts:
        try:
            plans.append(context.contract.check(text))
        except PlanError as exc:
            plans.append(f"no valid plan ({exc.rule}): {exc.reason}"[:300])
    valid = [(it.question, p) for it, p in zip(request.items, plans) if isinstance(p, Plan)]
    raw = iter(context.score(valid) if valid else [])
    scores = [next(raw) if isinstance(p, Plan) else None for p in plans]
    return ScoreResponse(scores=scores, errors=[None if isinstance(p, Plan) else p for p in plans])
