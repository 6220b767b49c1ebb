"""Content measures among plans of one shape: headroom, same-shape pairs (example copies apart), the AUC a
score earns on them; and the example-copy detector on the real prompts' examples."""

import pytest

from orchrm.bon.candidates import Candidate, Case
from orchrm.bon.content import (
    content_stats,
    copies_examples,
    example_markers,
    question_headroom,
    same_shape_auc,
    same_shape_pairs,
)
from orchrm.bon.selection import METHODS


def cand(i, ok, reward, shape="search", copies=False, valid=True):
    return Candidate(i, valid, reward, f"#{i}", ok, 10, 100, 1.0, 1.0, shape=shape, copies_example=copies)


def test_headroom_is_any_right_minus_mean_right_in_the_best_shape():
    # Best shape "search | python" (2 of 4 right: any 1 − mean 0.5); "cot" is worse (0 of 2).
    case = Case(
        "q",
        [
            cand(0, True, 0, "s|p"),
            cand(1, False, 0, "s|p"),
            cand(2, True, 0, "s|p"),
            cand(3, False, 0, "s|p"),
            cand(4, False, 0, "cot"),
            cand(5, False, 0, "cot"),
        ],
    )
    assert question_headroom(case) == pytest.approx(0.5)
    # A shape that is always right has no headroom: content cannot matter where every plan works.
    assert question_headroom(Case("r", [cand(0, True, 0, "cot"), cand(1, False, 0, "s")])) == 0.0
    assert question_headroom(Case("none", [cand(0, False, 0, valid=False)])) == 0.0


def test_same_shape_pairs_leave_example_copies_and_other_shapes_out():
    case = Case(
        "q",
        [cand(0, True, 0, "a"), cand(1, False, 0, "a"), cand(2, False, 0, "a", copies=True), cand(3, False, 0, "b")],
    )
    assert len(same_shape_pairs(case, clean=False)) == 2 and [
        (r.index, w.index) for r, w in same_shape_pairs(case, clean=True)
    ] == [(0, 1)]


def test_same_shape_auc_rewards_reading_and_a_shape_score_is_at_chance():
    cases = [
        Case("q1", [cand(0, True, 0.9), cand(1, False, 0.1), cand(2, True, 5.0, "other")]),
        Case("q2", [cand(0, False, 0.2), cand(1, True, 0.8), cand(2, False, 0.3)]),
    ]
    reader = same_shape_auc(cases, lambda c: c.reward, resamples=100)
    assert reader.value == 1.0 and reader.n_questions == 2 and reader.n_pairs == 3
    assert same_shape_auc(cases, lambda c: 0.0, resamples=100).value == 0.5  # ties count 1/2
    # shape-mean averages rewards within a shape: the same-shape AUC of the RM's shape choice is chance.
    stats = content_stats(cases, {m: (METHODS[m].seen, METHODS[m].score) for m in ("rm", "shape-mean")}, resamples=100)
    assert stats.auc["rm"].value == 1.0 and stats.auc["shape-mean"].value == 0.5
    assert (
        stats.questions == 2
        and stats.clean_pairs == 3 == stats.same_shape_pairs
        and stats.questions_with_clean_pairs == 2
    )
    assert stats.headroom.value == pytest.approx((0.0 + 2 / 3) / 2)  # q1: "other" (1 of 1) is its best shape
    # rm − shape-mean, paired by question: 1.0 − 0.5 on both questions, so the interval is that point
    gap = stats.rm_minus["shape-mean"]
    assert gap.value == pytest.approx(0.5) and gap.low == pytest.approx(0.5) and gap.high == pytest.approx(0.5)
    assert "rm" not in stats.rm_minus


def test_example_copies_are_examples_entities_and_numbers_the_question_does_not_hold():
    markers = example_markers()
    assert {"Velmor Labs", "Arlen Mills", "4093"} <= markers and "Which" not in markers
    q = "Which company does Ruxgoum Zorkbround work for?"
    assert copies_examples(["Ruxgoum Zorkbround works for Arlen Mills."], q)
    assert not copies_examples(["Which company does Ruxgoum Zorkbround work for?"], q)
    # The question itself names an example's number: using it is reading, not copying.
    assert not copies_examples(["Compute 812 + 5."], "What is 812 + 5?")
    assert copies_examples(["Compute 812 - 4093 + 77."], "What is 13 + 5?")


def test_the_report_states_the_content_measures(tmp_path):
    from orchrm.bon.compute import compute_results
    from orchrm.bon.config import BonConfig
    from orchrm.bon.report import write_reports
    from orchrm.bon.results import RunInfo

    cases = [
        Case("q1", [cand(0, True, 0.9), cand(1, False, 0.1)]),
        Case("q2", [cand(0, False, 0.9), cand(1, True, 0.1)]),
    ]
    r = compute_results(cases, BonConfig(judge=False, resamples=100), [], meta=RunInfo(task="t"))
    assert r.content.clean_pairs == 2 and r.content.auc["rm"].value == 0.5
    md = write_reports(r, tmp_path)["md"].read_text()
    assert "same-shape AUC of rm: 0.500" in md and "content headroom" in md
