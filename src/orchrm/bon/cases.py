"""From held-out traces to selection's `Case`s: each plan's length and costs, its RM reward, its shape (and
whether it copies the prompt's examples), the content-blind baselines' scores (which traces belong to a
question's first N plans is `mas.run_folder.first_plans`)."""

from __future__ import annotations

from dataclasses import replace

from ..mas.traces import Trace
from ..tasks.scoring import answer_key
from .blind import ContentBlind
from .candidates import Candidate, Case
from .content import copies_examples
from .prior import plan_signature


def _tokens(t: Trace, category: str) -> int:
    c = t.tokens.get(category)
    return c.total_tokens if c else 0


def plan_lengths(plans: list[Trace]) -> list[int]:
    """Each plan's length for `shortest`: the completion tokens of its plan call, or, when any plan of the
    question lacks a counted call (a plan written by hand, an old trace), the characters of every plan's
    text, so lengths within one question are always in one unit."""
    calls = [t.plan_call for t in plans]
    if all(c is not None and c.usage.completion_tokens > 0 for c in calls):
        return [c.usage.completion_tokens for c in calls]  # type: ignore[union-attr]
    return [len(t.plan_text) for t in plans]


def _alone(plans: list[Trace]) -> list[int]:
    """What each plan would cost sampled on its own request: the question's prompt (billed once, on the first
    plan of a group request) plus the plan's completion."""
    prompt = max((t.plan_call.usage.prompt_tokens for t in plans if t.plan_call is not None), default=0)
    return [
        prompt + t.plan_call.usage.completion_tokens if t.plan_call is not None else _tokens(t, "plan") for t in plans
    ]


def _seen(plans: list[Trace], blind: ContentBlind | None) -> bool | None:
    """Whether the training traces the baselines were fitted on hold the question's template."""
    template = plans[0].question_template if plans else None
    if template is None or blind is None or blind.templates is None:
        return None
    return template in blind.templates


def _with_blind(c: Candidate, t: Trace, blind: ContentBlind | None) -> Candidate:
    """A valid plan's shape and every fitted content-blind baseline's score of it."""
    if t.plan is None or not t.valid:
        return c
    copied = copies_examples((a.input for a in t.plan.agents), t.question)
    c = replace(c, shape=plan_signature(t.plan, "shape"), copies_example=copied)
    if blind is None:
        return c
    kind = blind.kind_prior.score(t.plan, t.question_kind) if blind.kind_prior is not None else None
    routed = blind.router.lookup(t.question, t.plan) if blind.router is not None else None
    return replace(
        c,
        prior=blind.prior.score(t.plan),
        kind_prior=kind,
        router=routed.value if routed else None,
        router_fallback=bool(routed and routed.fallback),
    )


def build_cases(
    grouped: dict[str, list[Trace]],
    rewards: dict[str, list[float]],
    rm_s: dict[str, float],
    blind: ContentBlind | None = None,
    rm_tokens: dict[str, int] | None = None,
) -> list[Case]:
    """Selection's view of each question's plans; `blind`, when given, scores every valid plan by each
    content-blind baseline it holds; `rm_tokens` is what a decoder RM read scoring each question."""
    cases = []
    for q, plans in grouped.items():
        cands = [
            _with_blind(
                Candidate(
                    index=t.plan_index,
                    valid=t.valid and t.executed,
                    reward=r,
                    answer_key=answer_key(t.final_answer),
                    correct=bool(t.score and t.score.correct),
                    plan_tokens=_tokens(t, "plan"),
                    exec_tokens=_tokens(t, "execute"),
                    plan_s=t.plan_call.latency_s if t.plan_call else 0.0,
                    exec_s=t.wall_s,
                    length=length,
                    plan_alone=alone,
                ),
                t,
                blind,
            )
            for t, r, length, alone in zip(plans, rewards[q], plan_lengths(plans), _alone(plans), strict=True)
        ]
        cases.append(
            Case(
                q,
                cands,
                rm_s=rm_s.get(q, 0.0),
                rm_tokens=(rm_tokens or {}).get(q, 0),
                kind=plans[0].question_kind if plans else None,
                seen=_seen(plans, blind),
            )
        )
    return cases
