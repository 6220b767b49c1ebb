"""The one reading of an orchestrator's text, shared by the reward path (`mas.completion`) and `orchrm import`.

The region a plan is read from is `plans.split_region`'s (chat turn, gpt-oss's final channel, reasoning
dropped). In it, MAS-Orchestra's `<agent>`/`<edge>` format is read by its converter; otherwise the last JSON plan
object; otherwise a non-empty `<answer>` (MAS-Orchestra's direct answer). Where MAS-Orchestra's own parser would
have read the same text differently, the reading says why (`mas_orchestra_differs`): `orchrm import` refuses such
a row, since the execution it records is not of the plan read; the reward path scores the plan read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..plans import MAX_PLAN_TEXT_CHARS, Plan, PlanError, parse_plan, split_region
from ._mas_orchestra import looks_like_mas_orchestra, parse_mas_orchestra, several_plans
from ._mas_read import field, holds_plan_tags


@dataclass(frozen=True)
class Reading:
    """The plan read from a completion, and why MAS-Orchestra would have read the text otherwise (or None)."""

    plan: Plan
    mas_orchestra_differs: PlanError | None = None


def plan_region(completion: str) -> str:
    """The part of a completion a plan is read from, stripped. Empty when nothing is left."""
    return split_region(completion).text


def read_completion(completion: str) -> Reading:
    """The plan in a completion, parsed but not yet validated. Raises `PlanError`."""
    if not isinstance(completion, str):
        raise PlanError("parse", f"the completion is {type(completion).__name__}, not text")
    region = split_region(completion)
    text = region.text
    if not text:
        raise PlanError("parse", "the completion holds no text outside reasoning blocks")
    if len(text) > MAX_PLAN_TEXT_CHARS:  # refused before any parsing: the time stays bounded whatever it holds
        raise PlanError("too_large", f"{len(text)} characters outside reasoning blocks, at most {MAX_PLAN_TEXT_CHARS}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PlanError("encoding", f"the completion holds a lone surrogate at character {exc.start}") from None
    if looks_like_mas_orchestra(text):
        return Reading(parse_mas_orchestra(text), _differs(text, region.dropped))
    try:
        plan = parse_plan(text)
    except PlanError as exc:
        answer = field(text, "answer") if exc.rule == "parse" else None
        if not answer:
            raise
        return Reading(Plan(answer=answer), _differs(text, region.dropped))
    # orchrm's JSON: MAS-Orchestra's parser finds no agent or answer in it and takes the whole reply as its answer
    return Reading(plan, PlanError("mas_orchestra_differs", "a JSON plan: MAS-Orchestra reads no plan in it"))


def _differs(text: str, dropped: str) -> PlanError | None:
    if dropped and holds_plan_tags(dropped[:MAX_PLAN_TEXT_CHARS]):
        return PlanError(
            "mas_orchestra_differs",
            "an <agent> or <edge> block in reasoning orchrm drops (a <think>/<thinking>/<reasoning> block or "
            "gpt-oss analysis before 'assistantfinal'): MAS-Orchestra's medium-level parser reads it as plan",
        )
    n = several_plans(text)
    if n > 1:
        return PlanError(
            "mas_orchestra_differs",
            f"{n} plans (each ending with its <edge> block): orchrm reads the last, MAS-Orchestra every agent "
            "block of all of them with the first <edge> block",
        )
    return None
