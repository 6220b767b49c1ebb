"""The trivial selectors rm is held to (shortest, prior), the one method registry, within-question AUC,
per-kind accuracy, and the marks that compare rm with the best trivial selector."""

from dataclasses import replace

import pytest

from orchrm.bon.auc import question_auc, within_question_auc
from orchrm.bon.candidates import Candidate, Case
from orchrm.bon.compute import compute_results, outcomes_at
from orchrm.bon.config import BonConfig
from orchrm.bon.report import kind_rows, mark_rows
from orchrm.bon.results import RunInfo
from orchrm.bon.selection import CONTENT_BLIND, METHODS, TRIVIAL, Context
from orchrm.bon.selectors import select_prior, select_shortest


def cand(i, correct, *, length=10, prior=None, reward=0.0, valid=True, execute=1000, exec_s=10.0):
    return Candidate(
        i,
        valid,
        reward,
        f"#{int(correct)}" if valid else None,
        correct,
        100,
        execute if valid else 0,
        1.0,
        exec_s if valid else 0.0,
        length=length,
        prior=prior,
    )


def test_shortest_takes_the_exact_expectation_over_tied_plans_not_the_first():
    c = Case(
        "q",
        [
            cand(0, False, length=3, valid=False),  # shorter, but invalid: never picked
            cand(1, False, length=10, execute=1000),
            cand(2, True, length=10, execute=3000, exec_s=20.0),
            cand(3, True, length=11),
        ],
    )
    o = select_shortest(c)
    assert o.correct == pytest.approx(0.5) and o.chosen is None and o.executed == 1
    assert o.tokens == {"plan": 400.0, "execute": 2000.0, "verify": 0.0}  # like rm: every plan sampled, one run
    assert o.wall_s == pytest.approx(1.0 + 15.0)
    alone = select_shortest(Case("q", [cand(0, True, length=4), cand(1, False, length=9)]))
    assert alone.correct == 1.0 and alone.chosen == 0


def test_prior_picks_the_highest_prior_with_ties_in_expectation():
    c = Case(
        "q",
        [
            cand(0, True, prior=0.4),
            cand(1, False, prior=0.7),
            cand(2, True, prior=0.7),
            cand(3, True, prior=0.9, valid=False),
        ],
    )
    o = select_prior(c)
    assert o.correct == pytest.approx(0.5) and o.chosen is None
    assert select_prior(Case("q", [cand(0, False, prior=0.2), cand(1, True, prior=0.3)])).chosen == 1
    nothing = select_prior(Case("q", [cand(0, True, valid=False)]))
    assert nothing.correct == 0.0 and nothing.executed == 0


def test_one_registry_names_every_method_and_drives_the_outcomes():
    assert list(METHODS) == [
        "rm",
        "rm-adaptive",
        "random",
        "shortest",
        "prior",
        "kind-prior",
        "router",
        "shape-mean",
        "kind-prior+rm",
        "majority",
        "judge",
        "oracle",
    ]
    assert set(TRIVIAL) <= set(CONTENT_BLIND) <= set(METHODS)
    assert all(m.description.startswith(name) for name, m in METHODS.items())
    scored = {n for n, m in METHODS.items() if m.score is not None}
    assert scored == {"rm", "shortest", "prior", "kind-prior", "router", "shape-mean"}
    cases = [Case("a", [cand(0, True, prior=0.5), cand(1, False, prior=0.1)])]
    out = outcomes_at(cases, 2, BonConfig(judge=False), 1.0, {})
    assert set(out) == set(METHODS) - {"judge", "kind-prior", "router", "shape-mean", "kind-prior+rm"}  # unfitted
    no_prior = [Case("a", [cand(0, True), cand(1, False)])]
    assert "prior" not in outcomes_at(no_prior, 2, BonConfig(judge=False), 1.0, {})
    assert METHODS["judge"].available(no_prior, Context(judge=True)) is False  # two valid plans, no judgment


def test_within_question_auc_counts_ties_as_half_and_skips_questions_without_mixed_outcomes():
    score = lambda c: c.reward  # noqa: E731
    mixed = Case(
        "m", [cand(i, ok, reward=r) for i, (ok, r) in enumerate([(True, 2), (True, 1), (False, 1), (False, 0)])]
    )
    assert question_auc(mixed, score) == pytest.approx(3.5 / 4)  # 2>1, 2>0, 1=1 (half), 1>0
    inverted = Case("i", [cand(0, True, reward=0), cand(1, False, reward=1)])
    all_right = Case("r", [cand(0, True), cand(1, True, reward=5)])
    all_wrong = Case("w", [cand(0, False), cand(1, False)])
    invalid_right = Case("v", [cand(0, True, valid=False, reward=9), cand(1, False)])  # its right plan never ran
    for c in (all_right, all_wrong, invalid_right):
        assert question_auc(c, score) is None
    auc = within_question_auc([mixed, all_right, inverted, all_wrong, invalid_right], score, resamples=200)
    assert auc["n_questions"] == 2 and auc["value"] == pytest.approx((0.875 + 0.0) / 2)
    assert auc["low"] <= auc["value"] <= auc["high"]
    assert within_question_auc([all_right], score)["value"] is None


def kinded_cases():
    # rm picks by reward; shortest by length; prior by prior
    return [
        Case("a1", [cand(0, True, reward=1, length=20, prior=0.1), cand(1, False, length=5, prior=0.9)], kind="bridge"),
        Case("a2", [cand(0, True, reward=1, length=5, prior=0.1), cand(1, False, length=20, prior=0.9)], kind="bridge"),
        Case("b1", [cand(0, True, reward=1, length=20, prior=0.9), cand(1, False, length=5, prior=0.1)], kind="lookup"),
        Case("c1", [cand(0, False, reward=1, prior=0.5), cand(1, True, prior=0.1)], kind=None),
    ]


def test_results_break_accuracy_down_by_question_kind_and_hold_rm_to_the_best_trivial_selector():
    res = compute_results(kinded_cases(), BonConfig(judge=False, resamples=200), [], meta=RunInfo(task="t"))
    r = res.dump()
    pk = r["per_kind"]
    assert list(pk) == ["bridge", "lookup", "unknown"]
    assert pk["bridge"]["n"] == 2 and pk["bridge"]["rm"] == 1.0 and pk["bridge"]["shortest"] == 0.5
    assert pk["bridge"]["prior"] == 0.0 and pk["lookup"]["prior"] == 1.0 and pk["unknown"]["rm"] == 0.0
    assert pk["unknown"]["shortest"] == 0.5  # equal lengths: the expectation over both
    m = r["marks"]
    # accuracy: rm 3/4; shortest (0 + 1 + 0 + .5)/4; prior (0 + 0 + 1 + 0)/4 -> shortest is the best trivial one
    assert m["best_trivial"] == "shortest"
    assert m["rm_minus_best_trivial"]["value"] == pytest.approx(0.75 - 0.375) == m["rm_minus_shortest"]["value"]
    assert m["rm_minus_prior"]["value"] == pytest.approx(0.5)
    assert "gap_closed_random_to_oracle" in m and "rm_minus_random" in m  # the old marks stay
    assert set(r["auc"]) == {"rm", "shortest", "prior"} and r["auc"]["rm"]["n_questions"] == 4
    assert r["auc"]["rm"]["value"] == pytest.approx(3 / 4)
    assert m["best_content_blind"] == "shortest" and "optimistic for the baseline" in r["notes"][0]
    header, rows = kind_rows(res)
    assert header[:3] == ["kind", "questions", "rm"] and rows[0][:3] == ["bridge", "2", "100.0"]
    assert any("best trivial selector, shortest" in row[0] for row in mark_rows(res))


def test_without_a_prior_the_method_is_absent_with_a_note_and_rm_is_held_to_shortest():
    cases = [Case(c.question_id, [replace(x, prior=None) for x in c.candidates], kind=c.kind) for c in kinded_cases()]
    r = compute_results(cases, BonConfig(judge=False, resamples=200), [], meta=RunInfo(task="t")).dump()
    assert "prior" not in r["methods"] and "prior" not in r["auc"] and "rm_minus_prior" not in r["marks"]
    assert r["marks"]["best_trivial"] == "shortest" and "--prior-traces" in r["notes"][0]


def test_kind_prior_rm_takes_the_priors_shape_and_the_rms_plan_within_it():
    kp = lambda i, ok, k, r: replace(cand(i, ok, reward=r), kind_prior=k)  # noqa: E731
    # rm alone would run plan 0 (another shape, wrong); the hybrid keeps kind-prior's shape and takes rm's best of it
    case = Case("q", [kp(0, False, 0.2, 9.0), kp(1, False, 0.7, 1.0), kp(2, True, 0.7, 2.0), kp(3, False, 0.7, 0.5)])
    case = replace(case, rm_tokens=300, rm_s=2.0)
    hybrid, prior = METHODS["kind-prior+rm"].run(case, Context()), METHODS["kind-prior"].run(case, Context())
    assert (hybrid.correct, hybrid.chosen, METHODS["rm"].run(case, Context()).correct) == (1.0, 2, 0.0)
    assert prior.correct == pytest.approx(1 / 3)  # kind-prior alone: the three of its shape in expectation
    assert hybrid.tokens["verify"] == 300 and hybrid.wall_s == pytest.approx(prior.wall_s + 2.0)
    tie = replace(case, candidates=[kp(0, True, 0.7, 1.0), kp(1, False, 0.7, 1.0)])
    assert METHODS["kind-prior+rm"].run(tie, Context()).correct == pytest.approx(0.5)  # rm's tie: in expectation
    assert METHODS["kind-prior+rm"].available([Case("q", [cand(0, True)])], Context()) is False  # no prior fitted
