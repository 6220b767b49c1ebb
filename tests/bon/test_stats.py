"""Bootstrap intervals over questions, and t intervals across training runs (their coverage: test_stats_coverage.py)."""

import numpy as np
import pytest
from scipy import stats

from orchrm.bon.bootstrap import Bootstrap
from orchrm.bon.stats import across_runs, compare, equivalence


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


def _ci(result) -> tuple[float, float]:  # a scipy TtestResult
    ci = result.confidence_interval(0.95)
    return float(ci.low), float(ci.high)


def test_runs_that_differ_only_in_level_give_the_t_interval_over_run_means():
    means = [0.52, 0.61, 0.57]
    iv = across_runs([[m] * 30 for m in means], seeds=[1, 2, 3])  # no question varies: runs alone
    assert iv.method == "t over runs" and iv.df == pytest.approx(2) and iv.question_se == 0
    assert (iv.low, iv.high) == pytest.approx(_ci(stats.ttest_1samp(means, 0)))
    assert iv.value == pytest.approx(np.mean(means)) and iv.run_means == pytest.approx(means) and iv.seeds == [1, 2, 3]


def test_runs_that_agree_still_carry_which_questions_were_drawn():
    per_q = np.random.default_rng(1).random(40)
    iv = across_runs([per_q, per_q, per_q])
    assert iv.run_se == 0 and iv.df == pytest.approx(39)
    assert (iv.low, iv.high) == pytest.approx(_ci(stats.ttest_1samp(per_q, 0)))


def test_the_same_seeds_pair_and_the_per_seed_differences_are_listed():
    rng = np.random.default_rng(2)
    per_q = rng.random(50)
    shift = {0: 0.03, 1: -0.04, 2: 0.05, 3: 0.0}
    runs = lambda seeds, d: [np.clip(per_q + shift[s] + d, 0, 1) for s in seeds]  # noqa: E731
    a, b = runs([1, 2, 3], 0.02), runs([0, 1, 2, 3], 0.0)  # the minus arm also ran seed 0
    iv = across_runs(a, b, seeds=[1, 2, 3], seeds_minus=[0, 1, 2, 3])
    assert iv.method == "paired t over seeds" and iv.paired and iv.seeds == iv.seeds_minus == [1, 2, 3]
    diffs = [np.mean(x) - np.mean(y) for x, y in zip(a, b[1:])]
    assert iv.differences == pytest.approx(diffs) and iv.df == pytest.approx(2)
    assert (iv.low, iv.high) == pytest.approx(_ci(stats.ttest_rel(np.mean(a, axis=1), np.mean(b[1:], axis=1))))


def test_different_seeds_are_unpaired_welch():
    rng = np.random.default_rng(3)
    a = [[m] * 20 for m in rng.normal(0.6, 0.05, 3)]
    b = [[m] * 20 for m in rng.normal(0.55, 0.08, 3)]
    iv = across_runs(a, b, seeds=[1, 2, 3], seeds_minus=[0, 1, 2])  # two seeds in common: too few to pair
    assert iv.method == "Welch t, unpaired" and not iv.paired and iv.differences is None
    assert iv.seeds == [1, 2, 3] and iv.seeds_minus == [0, 1, 2]
    welch = stats.ttest_ind(np.mean(a, axis=1), np.mean(b, axis=1), equal_var=False)
    assert (iv.low, iv.high) == pytest.approx(_ci(welch))


def test_a_seed_run_twice_is_not_paired():
    per_q = np.linspace(0, 1, 10)
    a = [per_q, per_q + 0.01, per_q - 0.01, per_q]
    iv = across_runs(a, a[:3], seeds=[1, 2, 3, 3], seeds_minus=[1, 2, 3])
    assert not iv.paired and iv.run_means == pytest.approx(np.mean(a, axis=1))


def test_one_run_gives_no_interval_and_bad_shapes_are_mistakes():
    iv = across_runs([[0.5, 0.6]])
    assert iv.value == pytest.approx(0.55) and iv.low is None and iv.fmt() == "55.0"
    assert compare([[0.5, 0.6]], [[0.4, 0.6]]).reading == "no interval (fewer than two runs)"
    with pytest.raises(ValueError, match="same questions"):
        across_runs([[0.1, 0.2]] * 2, [[0.1]] * 2)
    with pytest.raises(ValueError, match="2 seeds for 3 runs"):
        across_runs([[0.1, 0.2]] * 3, seeds=[1, 2])


def test_tost_and_the_words_for_a_difference():
    per_q = np.random.default_rng(4).random(60)
    close = [per_q + d for d in (0.0, 0.01, -0.01)]
    level = compare(close, [per_q + d for d in (0.005, 0.0, -0.005)], seeds=[1, 2, 3], seeds_minus=[1, 2, 3])
    assert level.equivalence.equivalent and level.equivalence.p_value < 0.05 and level.equivalence.margin == 0.05
    assert level.reading.startswith("equivalent within ±5 (TOST p=")
    inner = level.equivalence.interval
    assert inner.level == pytest.approx(0.9) and -0.05 < inner.low < inner.high < 0.05

    spread = [per_q + d for d in (-0.1, 0.0, 0.1)]
    unclear = compare(spread, close)
    assert not unclear.equivalence.equivalent and unclear.reading.startswith("not distinguished; interval [")
    assert compare([p + 0.2 for p in close], close).reading.startswith("better by 20.0 [")
    assert compare(close, [p + 0.2 for p in close]).reading.startswith("worse by 20.0 [")


def test_two_runs_an_arm_give_an_interval_but_never_equivalence():
    """Coverage is tested at 3 runs an arm; with 2, one difference estimates each arm's spread."""
    per_q = np.random.default_rng(5).random(60)
    two = compare([per_q, per_q + 0.002], [per_q + 0.001, per_q], seeds=[0, 1], seeds_minus=[0, 1])
    assert two.equivalence.equivalent  # the test itself passes ...
    assert two.reading.startswith("not distinguished; interval [") and "fewer than the 3" in two.reading  # ... unsaid
    far = compare([per_q + 0.3, per_q + 0.31], [per_q, per_q + 0.01])
    assert far.reading.startswith("better by 30.0 [") and "2 runs an arm" in far.reading


def test_tost_p_value_agrees_with_its_ninety_percent_interval():
    rng = np.random.default_rng(5)
    seen = set()
    for margin in np.linspace(0.01, 0.4, 40):
        a = [rng.random(30) for _ in range(3)]
        b = [rng.random(30) for _ in range(3)]
        eq = equivalence(a, b, margin=float(margin))
        assert eq.equivalent == (-margin < eq.interval.low and eq.interval.high < margin)
        seen.add(eq.equivalent)
    assert seen == {True, False}


def test_two_near_equal_paired_differences_keep_a_finite_interval():
    """Satterthwaite's df fell to ~0 here (an interval of ±1e28) when the question term nearly cancelled."""
    rng = np.random.default_rng(7)
    per_q = (rng.random((2, 60)) < 0.6).astype(float)
    other = per_q.copy()
    other[1, :1] = 1 - other[1, :1]  # the two seeds' differences: 0 and ±1/60
    iv = across_runs(per_q, other, seeds=[1, 2], seeds_minus=[1, 2], min_pairs=2)
    assert iv.paired and iv.df >= 1 and iv.high - iv.low < 2
