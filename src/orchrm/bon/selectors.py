"""How each best-of-N method picks among one question's N sampled plans, and what it is charged alone.

Plan validity is free to check (no sub-agent runs), so every method picks among the valid plans only; a
question without a valid plan is wrong for all of them. Tokens are split into `plan` (sampling plans),
`execute` (running sub-agents) and `verify` (an LLM judge); a method that executes one plan is charged that
plan's execution only, even when the run executed all N to serve the other methods. `wall_s` is the critical
path with plans sampled and executed in parallel, rounds of `rm-adaptive` in turn.

The content-blind selectors never read what a plan says: `shortest` (its length), `prior` (how often its
shape succeeded in training), `kind-prior` (the same per question kind) and `router` (a logistic regression
from the question's words and the plan's shape; `router.py`). `shape-mean` is an ablation of `rm` itself:
the RM's rewards averaged over each question's plans of one shape, so it keeps the RM's choice of shape and
throws away its choice among plans of that shape. Each ranks plans by a `score_*` function, which the
registry (`selection.METHODS`) also hands to the within-question AUC.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from .candidates import Candidate, Case, Outcome


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
        float(best.correct),
        _cost(case.candidates, [best], case.rm_tokens),
        executed=1,
        wall_s=_parallel_plan_s(case) + case.rm_s + best.exec_s,
        chosen=best.index,
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
    return Outcome(
        float(pick.correct),
        _cost(case.candidates, executed, case.rm_tokens),
        executed=len(executed),
        wall_s=wall,
        chosen=pick.index,
    )


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
    return Outcome(
        float(pick.correct) if pick else 0.0,
        tokens,
        executed=len(case.valid),
        wall_s=wall,
        chosen=pick.index if pick else None,
    )


def select_judge(case: Case) -> Outcome:
    """Execute all N; the Skill-RM evaluator judges every trajectory (listwise, no reference) and picks one."""
    valid = case.valid
    if not valid:
        return _nothing(case)
    tokens, wall = _all_executed(case, case.judge_tokens, case.judge_s)
    pick = next((c for c in valid if c.index == case.judge_best), None)
    if pick is None and len(valid) == 1:
        pick = valid[0]
    return Outcome(
        float(pick.correct) if pick else 0.0,
        tokens,
        executed=len(valid),
        wall_s=wall,
        chosen=pick.index if pick else None,
    )


def select_oracle(case: Case) -> Outcome:
    """Execute all N; right if any plan got it right (the upper bound of any selector)."""
    if not case.valid:
        return _nothing(case)
    tokens, wall = _all_executed(case)
    hit = next((c for c in case.valid if c.correct), None)
    return Outcome(
        float(hit is not None), tokens, executed=len(case.valid), wall_s=wall, chosen=hit.index if hit else None
    )


def _uniform_among(case: Case, tied: list[Candidate]) -> Outcome:
    """Execute one of `tied`, drawn uniformly: the exact expectation of its correctness and costs."""
    k = len(tied)
    return Outcome(
        sum(float(c.correct) for c in tied) / k,
        {**_cost(case.candidates, []), "execute": sum(c.exec_tokens for c in tied) / k},
        executed=1,
        wall_s=_parallel_plan_s(case) + sum(c.exec_s for c in tied) / k,
        chosen=tied[0].index if k == 1 else None,
    )


def _best_tied(case: Case, score: Callable[[Candidate], float], verify: float = 0.0) -> Outcome:
    """The valid plans with the highest score, ties in exact expectation (never broken by plan index)."""
    valid = case.valid
    if not valid:
        return _nothing(case)
    top = max(score(c) for c in valid)
    out = _uniform_among(case, [c for c in valid if score(c) == top])
    out.tokens["verify"] = float(verify)
    return out


def score_shortest(c: Candidate) -> float:
    return -float(c.length)


def score_prior(c: Candidate) -> float:
    # a plan without a fitted prior ranks below every scored one (and `Method.available` reads -inf as unfitted)
    return -math.inf if c.prior is None else c.prior


def score_kind_prior(c: Candidate) -> float:
    return -math.inf if c.kind_prior is None else c.kind_prior


def score_router(c: Candidate) -> float:
    return -math.inf if c.router is None else c.router


def score_reward(c: Candidate) -> float:
    return c.reward


def select_shortest(case: Case) -> Outcome:
    """Execute the shortest valid plan; plans of equal length share the pick in exact expectation."""
    return _best_tied(case, score_shortest)


def select_prior(case: Case) -> Outcome:
    """Execute the valid plan whose shape succeeded most often in training; ties in exact expectation."""
    return _best_tied(case, score_prior)


def select_kind_prior(case: Case) -> Outcome:
    """Execute the valid plan whose shape succeeded most often on training questions of the case's kind."""
    return _best_tied(case, score_kind_prior)


def select_router(case: Case) -> Outcome:
    """Execute the valid plan the router gives the highest P(right | question, shape)."""
    return _best_tied(case, score_router)


def select_shape_mean(case: Case) -> Outcome:
    """Execute the valid plan with the highest reward in a `shape_mean` case; charged the RM's reading."""
    return _best_tied(case, score_reward, case.rm_tokens)


def select_rm_within(case: Case, prior: Callable[[Candidate], float]) -> Outcome:
    """Execute the RM's best plan among the valid plans a content-blind `prior` ranks first: the prior picks the
    shape from training counts, the RM the plan within it (ties in exact expectation); charged the RM's reading."""
    valid = case.valid
    if not valid:
        return _nothing(case)
    top = max(prior(c) for c in valid)
    shaped = [c for c in valid if prior(c) == top]
    best = max(c.reward for c in shaped)
    out = _uniform_among(case, [c for c in shaped if c.reward == best])
    out.tokens["verify"] = float(case.rm_tokens)
    out.wall_s += case.rm_s
    return out


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
