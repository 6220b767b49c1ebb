"""bench/content_variants.py's learning-curve draw: whole questions, a seeded share of them, another draw a seed."""

from types import SimpleNamespace

import pytest

from bench_module import load_bench


@pytest.fixture(scope="module")
def cv(request):
    return load_bench(request, "content_variants.py")


def test_a_share_keeps_whole_questions_and_is_drawn_by_seed(cv):
    rows = [SimpleNamespace(question_id=f"q{q}", i=i) for q in range(20) for i in range(q % 3 + 1)]
    kept = cv._share(rows, 0.25, seed=0)
    questions = {r.question_id for r in kept}
    assert len(questions) == 5
    assert kept == [r for r in rows if r.question_id in questions]  # every pair of a kept question, in order
    assert kept == cv._share(rows, 0.25, seed=0)  # the same draw again
    assert {r.question_id for r in cv._share(rows, 0.25, seed=1)} != questions  # another seed, another draw
    assert {r.question_id for r in cv._share(rows, 0.5, seed=0)} != questions
    assert len({r.question_id for r in cv._share(rows[:1], 0.25, seed=0)}) == 1  # never none


def test_every_learning_curve_variant_is_a_variant_with_a_share_below_one(cv):
    assert set(cv.SHARES) <= set(cv.VARIANTS)
    assert all(0 < share < 1 for share in cv.SHARES.values())
