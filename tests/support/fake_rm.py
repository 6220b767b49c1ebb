"""A reward model without weights, for testing the server's request handling (and bench/fuzz.py)."""

from typing import Any

from pydantic import BaseModel

from orchrm.pairs import render_plan


class FakeCard(BaseModel):
    orchrm_version: str = "0.0.0"
    backbone: str = "fake"
    metrics: dict[str, Any] = {}
    max_length: int = 256
    render_version: int = 1


class FakeRM:
    """Scores a rendered (question, plan) by its length; records what it was asked to score."""

    def __init__(self) -> None:
        self.card = FakeCard()
        self.seen: list[tuple[str, str]] = []

    def render(self, plan: Any) -> str:
        return render_plan(plan, version=self.card.render_version)

    def score_rendered(self, items: list[tuple[str, str]], *, batch_size: int = 64) -> list[float]:
        self.seen.extend(items)
        return [float(len(q) + len(p)) for q, p in items]
