"""Selection methods on hand-built cases: who is picked, and what each method is charged."""

import math

import pytest

from orchrm.bon.candidates import Candidate, Case
from orchrm.bon.selectors import (
    select_adaptive,
    select_judge,
    select_majority,
    select_oracle,
    select_random,
    select_rm,
)


def cand(i, reward, answer, correct, valid=True, plan=100, execute=1000, plan_s=1.0, exec_s=10.0):
    return Candidate(i, valid, reward, answer, correct, plan, execute if valid else 0, plan_s, exec_s if valid else 0.0)


def case():
    # plan 0: invalid; 1: best reward but wrong; 2 and 3 agree on the right answer; 4 wrong.
    return Case(
        "q",
        [
            cand(0, 5.0, None, False, valid=False, plan=50),
            cand(1, 2.0, "#7", False),
            cand(2, 1.9, "#8", True, execute=2000),
            cand(3, 0.5, "#8", True),
            cand(4, -1.0, "#9", False),
        ],
        judge_best=2,
        judge_tokens=5000,
        judge_s=30.0,
        rm_s=0.5,
    )


def test_rm_executes_only_the_best_valid_plan_and_pays_for_every_plan_sampled():
    o = select_rm(case())
    assert o.chosen == 1 and o.correct == 0.0 and o.executed == 1
    assert o.tokens == {"plan": 450.0, "execute": 1000.0, "verify": 0.0}
    assert o.wall_s == pytest.approx(1.0 + 0.5 + 10.0)


def test_random_is_the_exact_expectation_over_valid_plans():
    o = select_random(case())
    assert o.correct == pytest.approx(2 / 4)
    # valid plans' mean plan cost, plus the invalid plan drawn first with probability 1/(V+1)
    assert o.tokens["plan"] == pytest.approx(100 + 50 / 5)
    assert o.tokens["execute"] == pytest.approx((1000 + 2000 + 1000 + 1000) / 4)


def test_random_matches_a_simulation_of_draw_until_valid():
    import random

    c = case()
    rng = random.Random(0)
    plan_cost, hits, trials = 0.0, 0, 20000
    for _ in range(trials):
        order = c.candidates[:]
        rng.shuffle(order)
        for x in order:
            plan_cost += x.plan_tokens
            if x.valid:
                hits += x.correct
                break
    o = select_random(c)
    assert plan_cost / trials == pytest.approx(o.tokens["plan"], rel=0.02)
    assert hits / trials == pytest.approx(o.correct, abs=0.02)


def test_majority_oracle_and_judge_execute_all_valid_plans():
    c = case()
    maj, orc, jud = select_majority(c), select_oracle(c), select_judge(c)
    assert maj.correct == 1.0 and maj.chosen == 2  # "#8" has two votes
    assert orc.correct == 1.0
    assert jud.correct == 1.0 and jud.chosen == 2
    for o in (maj, orc, jud):
        assert o.executed == 4 and o.tokens["execute"] == 5000 and o.tokens["plan"] == 450
    assert jud.tokens["verify"] == 5000 and maj.tokens["verify"] == 0
    assert jud.wall_s == pytest.approx(1.0 + 10.0 + 30.0)


def test_majority_tie_goes_to_the_earliest_plan():
    c = Case("q", [cand(0, 0, "#1", False), cand(1, 0, "#2", True)])
    assert select_majority(c).chosen == 0


def test_adaptive_interpolates_between_rm_and_a_weighted_vote():
    c = case()
    assert select_adaptive(c, 0.0).chosen == select_rm(c).chosen  # tau 0: the RM's pick
    narrow = select_adaptive(c, 0.2)  # plan 2 is within 0.2 of the best: two executions, "#7" vs "#8"
    assert narrow.executed == 2 and narrow.correct == 0.0  # the higher reward wins a 1-1 split
    wide = select_adaptive(c, math.inf)
    assert wide.executed == 4 and wide.correct == 1.0  # "#8" has weight exp(-.1)+exp(-1.5) > exp(0)
    assert narrow.tokens["execute"] == 3000


def test_adaptive_stops_once_an_answer_leads_by_two():
    c = Case(
        "q", [cand(0, 3, "#1", True), cand(1, 2.9, "#1", True), cand(2, 2.8, "#2", False), cand(3, 2.7, "#2", False)]
    )
    o = select_adaptive(c, math.inf)
    assert o.executed == 2 and o.correct == 1.0


def test_no_valid_plan_is_wrong_for_every_method_and_costs_the_sampling():
    c = Case("q", [cand(0, 1.0, None, False, valid=False), cand(1, 0.0, None, False, valid=False)])
    for select in (select_rm, select_random, select_majority, select_judge, select_oracle):
        o = select(c)
        assert o.correct == 0.0 and o.tokens["plan"] == 200 and o.tokens["execute"] == 0
    assert select_adaptive(c, 1.0).correct == 0.0


def test_prefix_keeps_the_first_plans_only():
    c = case().prefix(2)
    assert [x.index for x in c.candidates] == [0, 1] and c.judge_best is None
    assert select_oracle(c).correct == 0.0


def test_random_pays_the_prompt_on_every_draw_when_the_n_plans_shared_one_request():
    from dataclasses import replace

    # plan 0 carried the shared 900-token prompt; alone, each plan would cost prompt + its own completion
    shared = [replace(c, plan_tokens=(900 if c.index == 0 else 0) + 50, plan_alone=950) for c in case().candidates]
    grouped = Case("q", shared)
    assert select_rm(grouped).tokens["plan"] == 900 + 5 * 50  # N plans from one request: the prompt once
    assert select_random(grouped).tokens["plan"] == pytest.approx(950 + 950 / 5)


def test_a_decoder_rms_reading_is_billed_to_the_methods_that_use_its_rewards():
    from orchrm.bon.selection import METHODS, Context

    c = case()
    c.rm_tokens = 640
    assert select_rm(c).tokens["verify"] == 640 and select_adaptive(c, 1.0).tokens["verify"] == 640
    assert METHODS["shape-mean"].run(c, Context()).tokens["verify"] == 640
    assert select_majority(c).tokens["verify"] == 0 and select_random(c).tokens["verify"] == 0
    assert c.prefix(4).rm_tokens == 640 * 4 // 5
