"""bench/content_rm.py's summaries across RM seeds (issue #41): one `across_runs` run per RM seed, within-RM
differences paired by seed, arm − base by `compare`'s rule, no interval from one seed; and the committed
summaries are the ones its rows give today."""

import json

import pytest

from bench_module import load_bench

BLIND = {"shortest": [1, 0, 1, 1], "prior": [1, 0, 1, 0], "kind-prior": [1, 1, 0, 0], "router": [0, 1, 0, 1]}


@pytest.fixture(scope="module")
def crm(request):
    return load_bench(request, "content_rm.py")


def row(arm: str, seed: int, rm: list[int], shape_mean: list[int], auc: float) -> dict:
    content = {"auc": {"rm": {"value": auc}}, "headroom": None, "clean_pairs": 0}
    return {
        "arm": arm,
        "seed": seed,
        "rm_correct": rm,
        "shape_mean_correct": shape_mean,
        "blind_correct": BLIND,
        "questions": len(rm),
        "content": content,
    }


ROWS = [
    row("base", 0, [1, 1, 0, 0], [1, 0, 0, 0], 0.60),
    row("base", 1, [1, 1, 1, 0], [1, 1, 0, 0], 0.70),
    row("cf", 0, [1, 1, 1, 0], [1, 1, 0, 0], 0.65),
    row("cf", 1, [1, 1, 1, 1], [1, 1, 1, 0], 0.66),
]


def test_an_arm_is_one_run_per_seed_and_its_within_rm_differences_pair_by_seed(crm):
    p = crm.pooled(ROWS, "base")
    assert p["rm"]["method"] == "t over runs" and p["rm"]["run_means"] == [0.5, 0.75]
    sm = p["rm_minus_shape_mean"]["points"]
    assert sm["method"] == "paired t over seeds" and sm["differences"] == [0.25, 0.25]
    blind = p["rm_minus_best_content_blind"]["points"]
    assert p["best_content_blind"] == "shortest" and blind["paired"] and blind["seeds"] == [0, 1]


def test_arm_minus_base_on_two_shared_seeds_is_welch(crm):
    d = crm.arm_difference(ROWS, "cf")
    acc, auc = d["accuracy"]["points"], d["same_shape_auc"]["points"]
    assert acc["method"] == auc["method"] == "Welch t, unpaired" and not acc["paired"]
    assert acc["value"] == pytest.approx(0.25) and auc["value"] == pytest.approx(0.005) and auc["questions"] == 1
    assert d["same_shape_auc"]["question_term"] is False


def test_one_seed_gives_no_interval(crm):
    one = [r for r in ROWS if r["seed"] == 0]
    p, d = crm.pooled(one, "base"), crm.arm_difference(one, "cf")
    assert p["rm"]["low"] is None and p["rm_minus_shape_mean"]["reading"] == "no interval (fewer than two runs)"
    assert d["accuracy"]["reading"] == "no interval (fewer than two runs)"


def test_content_blind_picks_that_differ_between_seeds_are_a_mistake(crm):
    other = dict(ROWS[1], blind_correct=BLIND | {"router": [1, 1, 1, 1]})
    with pytest.raises(ValueError, match="differ between RM seeds"):
        crm.pooled([ROWS[0], other], "base")


def _rounded(x):
    """Floats to 9 places: scipy's t quantiles and numpy's sums differ in the last bits between releases (the
    3.12 venv resolves newer ones than 3.11's), which is not what this test is about."""
    if isinstance(x, float):
        return round(x, 9)
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


def test_the_committed_summaries_are_what_the_committed_rows_give(crm):
    committed = json.loads(crm.OUT.read_text())
    data = {"rows": committed["rows"], "run": committed["run"]}
    crm.summaries(data)
    assert _rounded(json.loads(json.dumps(data))) == _rounded(committed)
