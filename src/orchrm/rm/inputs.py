"""What may be scored, written once: `orchrm score`'s request lines and `orchrm serve`'s `/score` items are
checked by these models, so the two accept and refuse the same questions and plans.

A question is a non-empty string; a plan is a plan object or the orchestrator's raw text (a number, `null`
or `true` is neither, and is refused, never stringified). The JSON text itself is read by `safejson` first.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, Field

Question = Annotated[str, Field(min_length=1)]
PlanInput = dict[str, Any] | str


class ScoreItem(BaseModel):
    """One (question, plan) of a `/score` request."""

    question: Question
    plan: PlanInput


class ScoreRequest(BaseModel):
    """A `/score` request body."""

    items: list[ScoreItem] = Field(min_length=1)


class ScoreRow(BaseModel):
    """One line of an `orchrm score` request file; other keys are kept and written back with the scores."""

    question: Question
    plans: list[PlanInput]


def plan_text(plan: PlanInput) -> str:
    """What the RM reads of a plan: the text as given, an object as its JSON."""
    return plan if isinstance(plan, str) else json.dumps(plan)
