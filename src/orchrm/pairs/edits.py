"""Counterfactual plan edits: `edit_plan` and `choose_edits` over the kinds registered in `pairs/edit_kinds.py`,
pure (no LLM) and seeded.

An edit changes what a valid plan says; whether that matters is for the execution to decide, never for the
edit's intent (`pairs/counterfactual.py` executes edited plans, the builder pairs them by outcome).

Each kind lists its candidate edits in a seeded order. `edit_plan` takes the first whose plan validates (of at
most `MAX_TRIES`), else returns the first as an invalid edit, with the rule its plan breaks; None when the kind
does not apply (no entity named, a single agent). A candidate identical to the plan is no edit. No text edit
ever touches a `${...}` reference token: references change only where the kind is about references.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import islice

from pydantic import BaseModel, Field

from ..errors import ConfigError
from ..mas.plans import Plan, PlanError, validate_plan
from ..mas.traces import PlanErrorRecord
from ..tasks.base import Question
from .edit_kinds import EDIT_KINDS, EDITS, EditContext, EditKind

#: Candidate edits `edit_plan` validates before it settles for an invalid one.
MAX_TRIES = 24


class Edit(BaseModel):
    """One edit of a plan: its kind, what it changed, and the edited plan (None when the edit made it invalid)."""

    kind: EditKind
    description: str = Field(description="What was changed, e.g. `'Ada Lund' -> 'Bo Ek'` or `dropped a1 (search)`.")
    text: str = Field(description="The edited plan as JSON (kept for an invalid one, which has no `plan`).")
    plan: Plan | None = Field(None, description="The edited plan, validated (edges completed from its references).")
    error: PlanErrorRecord | None = Field(None, description="The rule the edited plan breaks, when it is invalid.")

    @property
    def valid(self) -> bool:
        return self.plan is not None


def edit_plan(
    plan: Plan, question: Question, kind: str, rng: random.Random, names: Sequence[Sequence[str]] = ()
) -> Edit | None:
    """One `kind` edit of a valid plan, or None when the kind does not apply to it. `names`: other entity
    names a swap may use, by group (a world's people, companies, cities); the question's own entities
    (`metadata["entities"]`) are always candidates."""
    if kind not in EDITS:
        raise ConfigError(f"unknown edit kind {kind!r}", hint=f"use {', '.join(EDIT_KINDS)}")
    if not plan.agents:
        return None  # the orchestrator's own answer: nothing to edit
    entities = question.metadata.get("entities")
    own = tuple(e for e in entities if isinstance(e, str) and e.strip()) if isinstance(entities, list) else ()
    ctx = EditContext(own, tuple(tuple(g) for g in names))
    first: Edit | None = None
    for edited, description in islice(EDITS[kind](plan, ctx, rng), MAX_TRIES):
        if _inputs(edited) == _inputs(plan):
            continue
        edit = _checked(kind, edited, description)  # type: ignore[arg-type]
        if edit.valid:
            return edit
        first = first or edit
    return first


def choose_edits(
    plan: Plan, question: Question, kinds: Sequence[str], k: int, seed: str, names: Sequence[Sequence[str]] = ()
) -> list[Edit]:
    """Up to `k` distinct edits of `plan`, deterministic in `seed`: the kinds in a seeded order, each taking a
    turn (again, with a fresh draw, once every kind has had one); an edit repeating the plan or an earlier
    edit is skipped, a kind that does not apply drops out. A larger `k` extends the list, never reorders it."""
    order = list(dict.fromkeys(kinds))
    random.Random(f"{seed}:order").shuffle(order)
    out: list[Edit] = []
    seen = {plan.to_json()}
    for turn in range(k + 2):
        for kind in list(order):
            if len(out) == k:
                return out
            edit = edit_plan(plan, question, kind, random.Random(f"{seed}:{kind}:{turn}"), names)
            if edit is None:
                order.remove(kind)
            elif edit.text not in seen:
                seen.add(edit.text)
                out.append(edit)
    return out


def _checked(kind: EditKind, edited: Plan, description: str) -> Edit:
    text = edited.to_json()
    try:
        return Edit(kind=kind, description=description, text=text, plan=validate_plan(edited))
    except PlanError as exc:
        error = PlanErrorRecord(rule=exc.rule, message=exc.reason, agent=exc.agent)
        return Edit(kind=kind, description=description, text=text, error=error)


def _inputs(plan: Plan) -> list[tuple[str, str, str]]:
    return [(a.id, a.type, a.input) for a in plan.agents]
