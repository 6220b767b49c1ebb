"""bench/demo_time.py reads each stage's span from the demo's own JSON progress lines, overlapping stages
included, and keeps an arm already measured for the same demo arguments (issue #49)."""

import importlib.util
import io
import json
from pathlib import Path

import pytest

BENCH = Path(__file__).parent.parent / "bench"


@pytest.fixture
def dt(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # the bench scripts import their `stamp` and `files` as siblings
    spec = importlib.util.spec_from_file_location("bench_demo_time", BENCH / "demo_time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _arm(dt):
    return dt.ArmResult(
        arm="current", commit="c", orchrm_path="p", demo_args=[], returncode=0, total_s=0, load_average_at_start=[]
    )


def test_stages_are_read_from_the_demos_json_progress_lines_as_they_overlap(dt):
    from orchrm.cli.progress import Mode, Reporter

    out = io.StringIO()
    with Reporter(Mode.json, interval_s=60, stream=out) as progress:  # the demo's own writer of these lines
        progress.note("opening the offline models")
        progress.update("train rollouts", done=0, total=8)
        progress.update("held-out plans", done=0, total=4)
        progress.update("held-out plans", done=4, total=4)
        progress.update("train rollouts", done=8, total=8, info="2/2 questions")
    arm = _arm(dt)
    for offset, line in enumerate(["orchrm demo: a human line", *out.getvalue().splitlines()]):
        dt._stage_lines(line, float(offset), arm)
    assert arm.notes == [(1.0, "opening the offline models")]
    train, held = arm.stages["train rollouts"], arm.stages["held-out plans"]
    assert (train.start_s, train.end_s, train.seconds, train.done, train.info) == (2.0, 5.0, 3.0, 8, "2/2 questions")
    assert (held.start_s, held.end_s, held.seconds) == (3.0, 4.0, 1.0)  # inside the training stage's span


def test_the_summary_gives_the_demos_clock_spent_tokens_and_accuracy(dt):
    arm = _arm(dt)
    summary = {
        "wall_s": 612.3,
        "tokens_this_run": {"plan": {"spent_prompt_tokens": 10, "spent_completion_tokens": 5}},
        "methods": {"rm": {"accuracy": {"value": 0.5}}},
    }
    dt._summary("not json\n" + json.dumps(summary) + "\n", arm)
    assert (arm.demo_wall_s, arm.tokens_spent, arm.accuracy) == (612.3, {"plan": 15}, {"rm": 0.5})


def test_a_result_file_is_resumed_only_for_the_same_base_and_demo_arguments(dt, tmp_path):
    path = tmp_path / "demo_time.json"
    record = dt.DemoTime(stamp={}, base="abc", demo_args=["--n-plans", "2"], arms={"base": _arm(dt)})
    path.write_text(record.model_dump_json())
    assert dt._read(path, "abc", ["--n-plans", "2"]).arms.keys() == {"base"}
    assert dt._read(path, "abc", []).arms == {}  # a full run never mixes with a smoke run's arms
    assert dt._read(path, "def", ["--n-plans", "2"]).arms == {}
