"""bench/demo_time.py reads each stage's span from the demo's own JSON progress lines, overlapping stages
included, and keeps an arm already measured for the same demo arguments (issue #49)."""

import io
import json

import pytest

from bench_module import load_bench


@pytest.fixture
def dt(request):
    return load_bench(request, "demo_time.py")


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


FAKE_MAIN = """
import json, os, sys, time
cache = os.environ["ORCHRM_RESPONSE_CACHE"]
assert not os.path.exists(cache), "the arm's response cache must start empty"
def line(**kw):
    print(json.dumps({"time": "00:00:00", **kw}), file=sys.stderr, flush=True)
line(note="opening the offline models")
line(stage="train rollouts", done=0, total=2, tokens=0, elapsed_s=0, finished=False, info="")
time.sleep(0.2)
line(stage="train rollouts", done=2, total=2, tokens=9, elapsed_s=0, finished=True, info="")
print(json.dumps({"wall_s": 0.2, "argv": sys.argv[1:], "cache": cache, "methods": {"rm": {"accuracy": {"value": 1.0}}}}))
"""


def test_an_arm_runs_the_trees_own_orchrm_with_a_fresh_cache_of_its_own(dt, tmp_path):
    import subprocess

    tree = tmp_path / "tree"
    (tree / "src" / "orchrm").mkdir(parents=True)
    (tree / "src" / "orchrm" / "__init__.py").write_text("")
    (tree / "src" / "orchrm" / "__main__.py").write_text(FAKE_MAIN)
    for cmd in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "fake"]):
        subprocess.run(["git", *cmd], cwd=tree, check=True)
    work = tmp_path / "work"
    (work / "base").mkdir(parents=True)
    (work / "base" / "responses.sqlite").write_text("left by a killed arm")  # a half-run is not a cold run
    arm = dt.run_arm("base", tree, ["--n-plans", "2"], work)
    assert arm.returncode == 0, arm.stderr_tail
    assert arm.orchrm_path == str(tree / "src" / "orchrm" / "__init__.py")  # the tree's code, not the checkout's
    assert arm.stages["train rollouts"].seconds >= 0.1 and arm.notes[0][1] == "opening the offline models"
    assert arm.demo_wall_s == 0.2 and arm.accuracy == {"rm": 1.0} and arm.total_s >= 0.2
    summary = json.loads((work / "base" / "summary.json").read_text())
    assert summary["argv"][-2:] == ["--n-plans", "2"] and "--json" in summary["argv"]
    assert summary["cache"] == str(work / "base" / "responses.sqlite")  # never the user's cache
