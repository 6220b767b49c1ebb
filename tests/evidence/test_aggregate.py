import itertools

import pytest

from orchrm.evidence.aggregate import (
    Evidence,
    OrderedJudgment,
    aggregate,
    best_index,
    combine_orders,
    combine_pair_preferences,
    pairwise_from_aggregates,
    verdict_of,
)


def ev(impact, score, verdict=None, **kw):
    return Evidence(
        source=f"{impact}-{score}",
        impact=impact,
        score=score,
        verdict=verdict or ("pass" if score and score >= 0.5 else "fail"),
        **kw,
    )


def test_failed_veto_caps_the_score_whatever_else_says():
    a = aggregate([ev("strong", 1.0), ev("evidence", 1.0), ev("veto", 0.0, cap=0.2)])
    assert a.score == 0.2 and a.vetoed and a.decisive


def test_passed_veto_does_not_raise_the_score():
    a = aggregate([ev("veto", 1.0), ev("evidence", 0.3)])
    assert a.score == 0.3 and not a.vetoed


@pytest.mark.parametrize(
    "strong,others", list(itertools.product([0.0, 1.0], [[0.0], [1.0], [1.0, 1.0, 1.0], [0.0, 0.0]]))
)
def test_strong_evidence_dominates(strong, others):
    a = aggregate([ev("strong", strong), *(ev("evidence", s, weight=5.0) for s in others)])
    assert (a.score >= 0.5) == (strong >= 0.5)
    assert a.decisive


def test_weighted_evidence_combines_by_weight_and_confidence():
    a = aggregate([ev("evidence", 1.0, weight=3.0), ev("evidence", 0.0, weight=1.0)])
    assert a.score == pytest.approx(0.75)
    b = aggregate([ev("evidence", 1.0, confidence=0.1), ev("evidence", 0.0, confidence=0.9)])
    assert b.score == pytest.approx(0.1)
    assert not a.decisive


def test_errors_are_excluded_not_zero():
    a = aggregate([ev("strong", None, verdict="error", reason="crashed"), ev("evidence", 0.8)])
    assert a.score == pytest.approx(0.8)
    assert a.errors and not a.decisive


def test_no_usable_evidence_gives_no_score():
    a = aggregate([ev("strong", None, verdict="error"), ev("evidence", None, verdict="abstain")])
    assert a.score is None and a.confidence == 0.0


def test_calibration_never_moves_the_score():
    base = aggregate([ev("evidence", 0.4)])
    with_cal = aggregate([ev("evidence", 0.4), ev("calibration", 1.0)])
    assert base.score == with_cal.score


def test_disagreeing_strong_evidence_lowers_confidence():
    agree = aggregate([ev("strong", 1.0), ev("strong", 1.0)])
    disagree = aggregate([ev("strong", 1.0), ev("strong", 0.0)])
    assert disagree.confidence < agree.confidence and not disagree.decisive


def test_both_orders_cancel_position_bias():
    p, conf, bias = combine_orders(OrderedJudgment("A", 0.9), OrderedJudgment("B", 0.9))
    assert p == 0.5 and bias and conf <= 0.2
    p, conf, bias = combine_orders(OrderedJudgment("A", 0.8), OrderedJudgment("A", 0.6))
    assert p == 1.0 and not bias and conf == pytest.approx(0.7)
    p, _, bias = combine_orders(OrderedJudgment("A", 0.8), OrderedJudgment("tie", 0.6))
    assert p == 0.75 and not bias


def test_pairwise_from_rules_is_decisive_only_with_decisive_evidence_on_both_sides():
    good, bad = aggregate([ev("strong", 1.0)]), aggregate([ev("strong", 0.0)])
    assert pairwise_from_aggregates(good, bad)[::2] == ("A", True)
    assert pairwise_from_aggregates(bad, good)[::2] == ("B", True)
    soft = aggregate([ev("evidence", 0.9)])
    assert pairwise_from_aggregates(soft, bad)[2] is False


def test_decisive_rules_dominate_the_llm_preference():
    assert combine_pair_preferences(1.0, True, 0.0, 1.0) == 1.0
    assert combine_pair_preferences(None, False, 0.0, 0.8) == 0.0
    assert combine_pair_preferences(None, False, None, 0.0) is None
    assert verdict_of(0.55) == "tie" and verdict_of(0.9) == "A" and verdict_of(0.1) == "B"


def test_listwise_best_index():
    assert best_index([0.2, 0.9, 0.5]) == (1, pytest.approx(0.4), False)
    assert best_index([None, 0.3])[0] == 1
    assert best_index([0.5, 0.5])[2] is True
    assert best_index([None, None])[0] is None
