"""Bootstrap intervals: they contain the estimate, shrink with more questions, and pair methods."""

import numpy as np
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


def test_two_way_widens_with_the_spread_between_training_runs():
    from orchrm.bon.stats import Bootstrap, two_way

    rng = np.random.default_rng(1)
    per_q = rng.random(40)
    agreeing = [per_q, per_q, per_q]
    spread = [np.clip(per_q + d, 0, 1) for d in (-0.2, 0.0, 0.2)]
    one = two_way(agreeing)
    assert one.value == pytest.approx(per_q.mean())
    q_only = Bootstrap(40, seed=0).mean(per_q)
    assert one.high - one.low == pytest.approx(q_only.high - q_only.low, rel=0.25)  # runs agree: questions alone
    wide = two_way(spread)
    assert wide.high - wide.low > 1.5 * (one.high - one.low)  # runs disagree: the interval says so


def test_two_way_difference_is_paired_on_questions():
    from orchrm.bon.stats import two_way

    rng = np.random.default_rng(2)
    per_q = rng.random(50)
    d = two_way([per_q + 0.05, per_q + 0.05], [per_q, per_q])
    assert d.value == pytest.approx(0.05) and d.low == pytest.approx(0.05) and d.high == pytest.approx(0.05)
    with pytest.raises(ValueError, match="same questions"):
        two_way([per_q], [per_q[:10]])
