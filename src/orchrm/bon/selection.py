"""The one registry of best-of-N selection methods: `METHODS`, name -> `Method` (its selector, when it
applies, the score it ranks plans by, the description the report shows, and how the plots draw it).

Every method sees the same N plans of a question (`candidates.py`) and is charged only what it would spend
alone (`selectors.py` holds how each picks and what it is charged). `CONTENT_BLIND` names the selectors that
never read what a plan says; `rm` is held to the best of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .candidates import CATEGORIES, Candidate, Case, Outcome
from .selectors import (
    score_kind_prior,
    score_prior,
    score_reward,
    score_router,
    score_shortest,
    select_adaptive,
    select_judge,
    select_kind_prior,
    select_majority,
    select_oracle,
    select_prior,
    select_random,
    select_rm,
    select_rm_within,
    select_router,
    select_shape_mean,
    select_shortest,
    shape_mean,
)

# The selection vocabulary was once all defined here; callers outside `bon` still import it from this module.
__all__ = [
    "CATEGORIES",
    "CONTENT_BLIND",
    "HYBRID",
    "METHODS",
    "TRIVIAL",
    "Candidate",
    "Case",
    "Context",
    "Method",
    "Outcome",
    "select_adaptive",
    "select_judge",
    "select_majority",
    "select_oracle",
    "select_prior",
    "select_random",
    "select_rm",
    "select_rm_within",
    "select_shortest",
    "shape_mean",
]


HYBRID = "kind-prior+rm"  # reads text only within the shape a content-blind selector chose


@dataclass(frozen=True)
class Context:
    """What a selector needs beyond the case: rm-adaptive's margin (reward units), whether the judge ran."""

    tau: float = 0.0
    judge: bool = False


@dataclass(frozen=True)
class Method:
    """A registered selection method: how it picks, when it applies, what it ranks plans by, what it is
    called in the report's legend, and how the plots draw it."""

    description: str
    select: Callable[[Case, Context], Outcome]
    available: Callable[[list[Case], Context], bool] = lambda cases, ctx: True
    score: Callable[[Candidate], float] | None = None  # the per-plan score it maximises (for within-question AUC)
    color: str | None = None  # matplotlib colour; None: the next of the cycle
    marker: str = "o"
    band: bool = False  # the plots shade its 95% interval
    view: Callable[[Case], Case] | None = None  # the case as this method sees it (select and score read it)

    def seen(self, case: Case) -> Case:
        return case if self.view is None else self.view(case)

    def run(self, case: Case, ctx: Context) -> Outcome:
        return self.select(self.seen(case), ctx)


def _judged(cases: list[Case], ctx: Context) -> bool:
    return ctx.judge and all(c.judged or len(c.valid) < 2 for c in cases)


def _fitted(
    description: str, select: Callable[[Case], Outcome], score: Callable[[Candidate], float], **style: str
) -> Method:
    """A content-blind baseline fitted on training traces (`select` executes the plan its `score` ranks first):
    available when some plan has a finite score (the baseline was fitted), and ranking plans by that score."""
    return Method(
        description,
        lambda c, x: select(c),
        available=lambda cases, ctx: any(score(c) > -math.inf for case in cases for c in case.candidates),
        score=score,
        **style,
    )


METHODS: dict[str, Method] = {
    "rm": Method(
        "rm (OrchRM: execute the best-scored plan)",
        lambda c, x: select_rm(c),
        score=score_reward,
        color="tab:red",
        marker="o",
        band=True,
    ),
    "rm-adaptive": Method(
        "rm-adaptive (execute top-k while the RM is unsure)",
        lambda c, x: select_adaptive(c, x.tau),
        color="tab:orange",
        marker="s",
    ),
    "random": Method("random (one plan)", lambda c, x: select_random(c), color="tab:gray", marker="v", band=True),
    "shortest": Method(
        "shortest (execute the shortest valid plan)",
        lambda c, x: select_shortest(c),
        score=score_shortest,
        color="tab:green",
        marker="<",
    ),
    "prior": _fitted(
        "prior (execute the plan shape that succeeded most in training)",
        select_prior,
        score_prior,
        color="tab:olive",
        marker=">",
    ),
    "kind-prior": _fitted(
        "kind-prior (execute the plan shape that succeeded most on training questions of the same kind)",
        select_kind_prior,
        score_kind_prior,
        color="tab:brown",
        marker="p",
    ),
    "router": _fitted(
        "router (logistic regression from question words x plan shape; never reads the plan)",
        select_router,
        score_router,
        color="tab:cyan",
        marker="h",
    ),
    "shape-mean": Method(
        "shape-mean (rm's rewards averaged within each shape: rm's choice of shape only)",
        lambda c, x: select_shape_mean(c),
        available=lambda cases, ctx: any(c.shape for k in cases for c in k.candidates),
        score=score_reward,
        color="tab:pink",
        marker="X",
        view=shape_mean,
    ),
    # Added on the positive control (FINDINGS.md), where rm ordered plans of one shape well yet lost to kind-prior
    # on the choice of shape: the two jobs split between what each reads.
    HYBRID: Method(
        "kind-prior+rm (kind-prior's shape, then rm's best plan of that shape)",
        lambda c, x: select_rm_within(c, score_kind_prior),
        available=lambda cases, ctx: any(score_kind_prior(c) > -math.inf for case in cases for c in case.candidates),
        color="darkred",
        marker="P",
    ),
    "majority": Method("majority (execute all, vote)", lambda c, x: select_majority(c), color="tab:blue", marker="^"),
    "judge": Method(
        "judge (execute all, Skill-RM listwise)",
        lambda c, x: select_judge(c),
        available=_judged,
        color="tab:purple",
        marker="D",
    ),
    "oracle": Method("oracle (execute all, any correct)", lambda c, x: select_oracle(c), color="black", marker="*"),
}
"""Every selection method by name, in the order reports list them."""
TRIVIAL = ("shortest", "prior")  # the zero-learning selectors `rm` was first held to (issue #13's mark)
CONTENT_BLIND = ("shortest", "prior", "kind-prior", "router")  # the selectors that never read a plan's text
