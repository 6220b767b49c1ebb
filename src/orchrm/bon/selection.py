"""Best-of-N selection methods over one question's N sampled plans, each charged only what it would spend alone.

Every method sees the same N plans. Plan validity is free to check (no sub-agent runs), so every method picks
among the valid plans only; a question without a valid plan is wrong for all of them. Tokens are split into
`plan` (sampling plans), `execute` (running sub-agents) and `verify` (an LLM judge); a method that executes
one plan is charged that plan's execution only, even when the run executed all N to serve the other methods.
`wall_s` is the critical path with plans sampled and executed in parallel, rounds of `rm-adaptive` in turn.

`METHODS` is the one registry of methods: name -> `Method` (its selector, when it applies, the score it ranks
plans by, the description the report shows, and how the plots draw it).

The content-blind selectors (`CONTENT_BLIND`) never read what a plan says: `shortest` (its length), `prior`
(how often its shape succeeded in training), `kind-prior` (the same per question kind) and `router` (a
logistic regression from the question's words and the plan's shape; `router.py`). `rm` is held to the best
of them. `shape-mean` is an ablation of `rm` itself: the RM's rewards averaged over each question's plans of
one shape, so it keeps the RM's choice of shape and throws away its choice among plans of that shape.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

CATEGORIES = ("plan", "execute", "verify")


@dataclass(frozen=True)
class Candidate:
    """One sampled plan as selection sees it: validity, RM reward, and (if executed) its answer and cost."""

    index: int
    valid: bool
    reward: float
    answer_key: str | None = None
    correct: bool = False
    plan_tokens: int = 0
    exec_tokens: int = 0
    plan_s: float = 0.0
    exec_s: float = 0.0
    length: int = 0  # the plan's length, for `shortest` (see `cases.plan_lengths` for the unit)
    prior: float | None = None  # the plan-shape prior's success rate, None when no prior was fitted
    kind_prior: float | None = None  # the shape's success rate among training questions of the same kind
    router: float | None = None  # the router's P(right | question, shape)
    router_fallback: bool = False  # the router never saw this shape: `router` is the shape prior's score
    plan_alone: int = 0  # what sampling this plan on its own request would cost (0: plan_tokens), for `random`
    shape: str | None = None  # the plan's shape signature (`plan_signature(plan, "shape")`), for `shape-mean`
    copies_example: bool = False  # its inputs hold a worked example's entity or number (`content.copies_examples`)


@dataclass
class Case:
    """One held-out question: its candidates in plan-index order, and the judge's pick among the valid ones."""

    question_id: str
    candidates: list[Candidate]
    judge_best: int | None = None  # a candidate index
    judge_tokens: int = 0
    judge_s: float = 0.0
    rm_s: float = 0.0  # time to score the candidates with the RM
    rm_tokens: int = 0  # tokens a decoder RM read scoring them (`verify`; 0 for an encoder RM)
    kind: str | None = None  # the question's kind, for per-kind breakdowns
    judged: bool = False  # a judgment exists for exactly these candidates

    def prefix(self, n: int) -> Case:
        """The case as if only the first n plans had been sampled (judge fields belong to the full case)."""
        share = self.rm_tokens * n // max(len(self.candidates), 1)  # a decoder RM reads each plan once
        return Case(self.question_id, self.candidates[:n], rm_s=self.rm_s, rm_tokens=share, kind=self.kind)

    @property
    def valid(self) -> list[Candidate]:
        return [c for c in self.candidates if c.valid]


@dataclass
class Outcome:
    """What one method achieved on one question: correctness (an expectation for `random`) and its costs."""

    correct: float
    tokens: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    executed: float = 0.0
    wall_s: float = 0.0
    chosen: int | None = None

    @property
    def total_tokens(self) -> float:
        return sum(self.tokens.values())


def _cost(plans: list[Candidate], executed: list[Candidate], verify: float = 0.0) -> dict[str, float]:
    return {
        "plan": float(sum(c.plan_tokens for c in plans)),
        "execute": float(sum(c.exec_tokens for c in executed)),
        "verify": float(verify),
    }


def _best_by_reward(cands: list[Candidate]) -> Candidate:
    return max(cands, key=lambda c: (c.reward, -c.index))


def _vote(executed: list[Candidate], weights: dict[int, float] | None = None) -> Candidate | None:
    """The representative of the answer with the most (weighted) votes; ties go to the earliest plan."""
    tally: dict[str, float] = defaultdict(float)
    first: dict[str, Candidate] = {}
    for c in executed:
        if c.answer_key is None:
            continue
        tally[c.answer_key] += 1.0 if weights is None else weights[c.index]
        first.setdefault(c.answer_key, c)
    if not tally:
        return None
    key = max(tally, key=lambda k: (tally[k], -first[k].index))
    return first[key]


def _nothing(case: Case) -> Outcome:
    return Outcome(0.0, _cost(case.candidates, []), wall_s=max((c.plan_s for c in case.candidates), default=0.0))


def _parallel_plan_s(case: Case) -> float:
    return max((c.plan_s for c in case.candidates), default=0.0)


def select_rm(case: Case) -> Outcome:
    """OrchRM: score the N plans, execute only the best."""
    valid = case.valid
    if not valid:
        return _nothing(case)
    best = _best_by_reward(valid)
    return Outcome(
        float(best.correct), _cost(case.candidates, [best], case.rm_tokens), executed=1,
        wall_s=_parallel_plan_s(case) + case.rm_s + best.exec_s, chosen=best.index,
    )


def select_adaptive(case: Case, tau: float) -> Outcome:
    """Execute the RM's best plan, then the next-best while its reward is within `tau` of the best and no
    answer leads the others by two votes; pick the answer with the largest reward-weighted vote."""
    valid = sorted(case.valid, key=lambda c: (-c.reward, c.index))
    if not valid:
        return _nothing(case)
    top = valid[0].reward
    executed = [valid[0]]
    for nxt in valid[1:]:
        if top - nxt.reward >= tau or _decided(executed):
            break
        executed.append(nxt)
    weights = {c.index: math.exp(c.reward - top) for c in executed}
    pick = _vote(executed, weights) or executed[0]
    wall = _parallel_plan_s(case) + case.rm_s + executed[0].exec_s + max((c.exec_s for c in executed[1:]), default=0.0)
    return Outcome(float(pick.correct), _cost(case.candidates, executed, case.rm_tokens), executed=len(executed), wall_s=wall,
                   chosen=pick.index)  # fmt: skip


def _decided(executed: list[Candidate]) -> bool:
    counts = sorted(
        (sum(1 for c in executed if c.answer_key == k) for k in {c.answer_key for c in executed if c.answer_key}),
        reverse=True,
    )
    return bool(counts) and counts[0] - (counts[1] if len(counts) > 1 else 0) >= 2


def select_random(case: Case) -> Outcome:
    """The single-sample baseline, in exact expectation over random orders: draw plans until one is valid,
    execute it. Each invalid plan is drawn before every valid one with probability 1/(V+1). Each draw is
    its own request, so each pays the prompt (`plan_alone`), where the N plans shared one."""
    valid = case.valid
    invalid = [c for c in case.candidates if not c.valid]
    if not valid:
        return _nothing(case)
    v = len(valid)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    tokens = {
        "plan": mean([_alone(c) for c in valid]) + sum(_alone(c) for c in invalid) / (v + 1),
        "execute": mean([c.exec_tokens for c in valid]),
        "verify": 0.0,
    }
    wall = mean([c.plan_s + c.exec_s for c in valid]) + sum(c.plan_s for c in invalid) / (v + 1)
    return Outcome(mean([float(c.correct) for c in valid]), tokens, executed=1, wall_s=wall)


def _alone(c: Candidate) -> int:
    return c.plan_alone or c.plan_tokens


def _all_executed(case: Case, verify: float = 0.0, extra_s: float = 0.0) -> tuple[dict[str, float], float]:
    valid = case.valid
    wall = _parallel_plan_s(case) + max((c.exec_s for c in valid), default=0.0) + extra_s
    return _cost(case.candidates, valid, verify), wall


def select_majority(case: Case) -> Outcome:
    """Execute all N; the most frequent answer wins (ties: the earliest plan's)."""
    if not case.valid:
        return _nothing(case)
    tokens, wall = _all_executed(case)
    pick = _vote(case.valid)
    return Outcome(float(pick.correct) if pick else 0.0, tokens, executed=len(case.valid), wall_s=wall,
                   chosen=pick.index if pick else None)  # fmt: skip


def select_judge(case: Case) -> Outcome:
    """Execute all N; the Skill-RM evaluator judges every trajectory (listwise, no reference) and picks one."""
    valid = case.valid
    if not valid:
        return _nothing(case)
    tokens, wall = _all_executed(case, case.judge_tokens, case.judge_s)
    pick = next((c for c in valid if c.index == case.judge_best), None)
    if pick is None and len(valid) == 1:
        pick = valid[0]
    return Outcome(float(pick.correct) if pick else 0.0, tokens, executed=len(valid), wall_s=wall,
                   chosen=pick.index if pick else None)  # fmt: skip


def select_oracle(case: Case) -> Outcome:
    """Execute all N; right if any plan got it right (the upper bound of any selector)."""
    if not case.valid:
        return _nothing(case)
    tokens, wall = _all_executed(case)
    hit = next((c for c in case.valid if c.correct), None)
    return Outcome(float(hit is not None), tokens, executed=len(case.valid), wall_s=wall,
                   chosen=hit.index if hit else None)  # fmt: skip


def _uniform_among(case: Case, tied: list[Candidate]) -> Outcome:
    """Execute one of `tied`, drawn uniformly: the exact expectation of its correctness and costs."""
    k = len(tied)
    return Outcome(
        sum(float(c.correct) for c in tied) / k,
        {**_cost(case.candidates, []), "execute": sum(c.exec_tokens for c in tied) / k},
        executed=1, wall_s=_parallel_plan_s(case) + sum(c.exec_s for c in tied) / k,
        chosen=tied[0].index if k == 1 else None,
    )  # fmt: skip


def _best_tied(case: Case, score: Callable[[Candidate], float], verify: float = 0.0) -> Outcome:
    """The valid plans with the highest score, ties in exact expectation (never broken by plan index)."""
    valid = case.valid
    if not valid:
        return _nothing(case)
    top = max(score(c) for c in valid)
    out = _uniform_among(case, [c for c in valid if score(c) == top])
    out.tokens["verify"] = float(verify)
    return out


def _shorter(c: Candidate) -> float:
    return -float(c.length)


def _prior(c: Candidate) -> float:
    return -math.inf if c.prior is None else c.prior


def select_shortest(case: Case) -> Outcome:
    """Execute the shortest valid plan; plans of equal length share the pick in exact expectation."""
    return _best_tied(case, _shorter)


def select_prior(case: Case) -> Outcome:
    """Execute the valid plan whose shape succeeded most often in training; ties in exact expectation."""
    return _best_tied(case, _prior)


def _kind_prior(c: Candidate) -> float:
    return -math.inf if c.kind_prior is None else c.kind_prior


def _router(c: Candidate) -> float:
    return -math.inf if c.router is None else c.router


def _reward(c: Candidate) -> float:
    return c.reward


def shape_mean(case: Case) -> Case:
    """The case with each valid plan's reward replaced by the mean reward of the question's valid plans of
    the same shape (a plan without a shape keeps its own)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for c in case.valid:
        if c.shape is not None:
            groups[c.shape].append(c.reward)
    means = {k: sum(v) / len(v) for k, v in groups.items()}
    cands = [replace(c, reward=means[c.shape]) if c.valid and c.shape in means else c for c in case.candidates]
    return replace(case, candidates=cands)


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


def _has(score: Callable[[Candidate], float]) -> Callable[[list[Case], Context], bool]:
    """Available when some plan has a finite score (the baseline was fitted)."""
    return lambda cases, ctx: any(score(c) > -math.inf for case in cases for c in case.candidates)


METHODS: dict[str, Method] = {
    "rm": Method(
        "rm (OrchRM: execute the best-scored plan)", lambda c, x: select_rm(c), score=lambda c: c.reward,
        color="tab:red", marker="o", band=True,
    ),
    "rm-adaptive": Method(
        "rm-adaptive (execute top-k while the RM is unsure)", lambda c, x: select_adaptive(c, x.tau),
        color="tab:orange", marker="s",
    ),
    "random": Method("random (one plan)", lambda c, x: select_random(c), color="tab:gray", marker="v", band=True),
    "shortest": Method(
        "shortest (execute the shortest valid plan)", lambda c, x: select_shortest(c), score=_shorter,
        color="tab:green", marker="<",
    ),
    "prior": Method(
        "prior (execute the plan shape that succeeded most in training)", lambda c, x: select_prior(c),
        available=_has(_prior), score=_prior, color="tab:olive", marker=">",
    ),
    "kind-prior": Method(
        "kind-prior (execute the plan shape that succeeded most on training questions of the same kind)",
        lambda c, x: _best_tied(c, _kind_prior), available=_has(_kind_prior), score=_kind_prior,
        color="tab:brown", marker="p",
    ),
    "router": Method(
        "router (logistic regression from question words x plan shape; never reads the plan)",
        lambda c, x: _best_tied(c, _router), available=_has(_router), score=_router, color="tab:cyan", marker="h",
    ),
    "shape-mean": Method(
        "shape-mean (rm's rewards averaged within each shape: rm's choice of shape only)",
        lambda c, x: _best_tied(c, _reward, c.rm_tokens), available=lambda cases, ctx: any(c.shape for k in cases for c in k.candidates),
        score=_reward, color="tab:pink", marker="X", view=shape_mean,
    ),
    "majority": Method("majority (execute all, vote)", lambda c, x: select_majority(c), color="tab:blue", marker="^"),
    "judge": Method(
        "judge (execute all, Skill-RM listwise)", lambda c, x: select_judge(c), available=_judged,
        color="tab:purple", marker="D",
    ),
    "oracle": Method("oracle (execute all, any correct)", lambda c, x: select_oracle(c), color="black", marker="*"),
}  # fmt: skip
"""Every selection method by name, in the order reports list them."""
TRIVIAL = ("shortest", "prior")  # the zero-learning selectors `rm` was first held to (issue #13's mark)
CONTENT_BLIND = ("shortest", "prior", "kind-prior", "router")  # the selectors that never read a plan's text
