"""Bootstrap intervals: they contain the estimate, shrink with more questions, and pair methods."""

import pytest

from orchrm.bon.stats import Bootstrap


def test_mean_interval_contains_the_mean_and_shrinks_with_more_questions():
    small = Bootstrap(20, resamples=2000).mean([1.0] * 10 + [0.0] * 10)
    big = Bootstrap(200, resamples=2000).mean([1.0] * 100 + [0.0] * 100)
    assert small.value == pytest.approx(0.5) and small.low < 0.5 < small.high
    assert (big.high - big.low) < (small.high - small.low) / 2


def test_paired_difference_of_identical_methods_is_exactly_zero():
    b = Bootstrap(30)
    xs = [i % 2 for i in range(30)]
    d = b.diff(xs, xs)
    assert d.value == 0 and d.low == 0 and d.high == 0


def test_ratio_and_gap_closed():
    b = Bootstrap(4, resamples=500)
    assert b.ratio([1, 1, 1, 1], [4, 4, 4, 4]).value == pytest.approx(0.25)
    g = b.gap_closed([1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1])  # method 0.5, low 0, high 1
    assert g.value == pytest.approx(0.5)
    assert Bootstrap(2).gap_closed([1, 1], [1, 1], [1, 1]).value is None  # no gap to close


def test_no_questions_gives_no_interval():
    assert Bootstrap(0).mean([]).value is None
    assert Bootstrap(0).mean([]).fmt() == "n/a"
