"""bench/cost_regimes.py: every token total on a named footing, the curve from the fresh grid (issue #41 item 4)."""

import pytest

from bench_module import load_bench


@pytest.fixture
def cr(request):
    return load_bench(request, "cost_regimes.py")


def collection(cr, **kw):
    fields = dict(
        run="r",
        plans=16,
        questions=2,
        executed=10,
        plan_prompt=14_000,
        plan_prompt_once=2_000,
        plan_completion=700,
        execute=5_000,
        verify=0,
        unrecorded_plans=2,
        unrecorded_prompt=2_000,
        unrecorded_completion=640,
    )
    return cr.PairCollection(**(fields | kw))


def arm(cr, reward, tokens):
    return cr.ArmTokens(
        arm=reward,
        reward=reward,
        seed=1,
        group_size=8,
        tokens=tokens,
        plan_prompt=0,
        plan_completion=0,
        plan_calls=0,
        execute=0,
        samples=128,
        valid=100,
        step_s=1.0,
    )


def test_each_footing_bills_the_pair_collection_its_own_way(cr):
    col = collection(cr)
    assert col.cost("training") == 0
    assert col.cost("pairs as collected") == 14_000 + 2_000 + 700 + 640 + 5_000  # every plan its own prompt
    assert col.cost("pairs as collected", unrecorded=False) == 14_000 + 700 + 5_000  # the traces' ledger alone
    assert col.cost("pairs as trained") == 2_000 + 700 + 640 + 5_000  # a question's prompt once
    assert col.cost("pairs as trained", execute=0.0) == 2_000 + 700 + 640


def test_only_rewards_fitted_on_the_collection_pay_for_it(cr):
    col = collection(cr)
    for reward in ("rm", "prior", "router"):
        assert cr.footing_total(arm(cr, reward, 1_000), "pairs as trained", col) == 1_000 + col.cost("pairs as trained")
        assert cr.footing_total(arm(cr, reward, 1_000), "training", col) == 1_000
    for reward in ("execute", "valid"):
        assert cr.footing_total(arm(cr, reward, 1_000), "pairs as collected", col) == 1_000


def test_steps_to_save_with_the_pairs_fall_to_their_limit_from_above(cr):
    parts = cr.StepParts(
        G=8,
        P=970,
        p=59,
        a0=2 * (970 + 8 * 59),
        valid_share=0.87,
        e_sampled=538,
        e_valid=619,
        e_by_arm={},
        r={"minilm": 0.0, "decoder": 63.0},
        step_s={},
    )
    col = collection(cr, executed=205)
    limit = 5 * 205 / (8 * 0.87)
    steps = [cr.with_pairs(parts, col, e, recorded=False)["pairs as collected"]["5x"] for e in (1e4, 1e5, 1e7)]
    assert (
        all(s > limit for s in steps)
        and steps == sorted(steps, reverse=True)
        and steps[-1] == pytest.approx(limit, rel=1e-3)
    )
    assert cr.with_pairs(parts, col, 538, recorded=True)["pairs as trained"]["5x"] is None  # never at today's cost
    assert cr.steps_for(1, 538, 0.0, 1_000.0, parts) == pytest.approx(1_000 / (8 * 538))  # 1x: pay the pairs back


def test_the_committed_collection_matches_the_traces_ledger(cr):
    col = cr.pair_collection(cr.pairs_run("rm@1"))
    ledger = col.cost("pairs as collected", unrecorded=False)
    assert ledger == 326_476  # what bench/train_orchestrator.py's pair_collection_tokens sums over the same traces
    assert (col.plans, col.executed, col.unrecorded_plans) == (240, 205, 35)
    assert col.unrecorded_completion == 35 * 320  # every unrecorded plan was cut off at max_tokens
