import json

import pytest

from orchrm.errors import ConfigError, RunFileError
from orchrm.mas.rollout import RunConfig, _resumed
from orchrm.mas.run_folder import (
    first_plans,
    open_run_file,
    read_run_config,
    rollout_differences,
    run_traces,
    settle_run_file,
)
from orchrm.tasks.base import Question
from synthetic_traces import plan_text, trace

PLAN = plan_text("cot")


def _file():
    # file order is completion order: q1#1 finished before q1#0; q1#0 was written twice (a kill before the
    # writer's mark); q3 is another config's question; q2#5 is beyond N
    return [
        trace("q1", 1, PLAN, answer="a"),
        trace("q1", 0, PLAN, answer="first"),
        trace("q2", 0, PLAN),
        trace("q1", 0, PLAN, answer="dup"),
        trace("q3", 0, PLAN),
        trace("q2", 5, PLAN),
    ]


def test_run_traces_keeps_file_order_and_the_first_of_each_plan():
    got = run_traces(_file(), ["q1", "q2"], 4)
    assert [(t.question_id, t.plan_index, t.final_answer) for t in got] == [
        ("q1", 1, "a"),
        ("q1", 0, "first"),
        ("q2", 0, None),
    ]


def test_first_plans_groups_in_index_order_with_every_wanted_question():
    got = first_plans(_file(), ["q1", "q2", "q4"], 4)
    assert {q: [t.plan_index for t in plans] for q, plans in got.items()} == {"q1": [0, 1], "q2": [0], "q4": []}
    assert got["q1"][0].final_answer == "first"


def test_resume_counts_each_plan_once():
    questions = [Question(id=q, question=f"{q}?", answer="4") for q in ("q1", "q2")]
    done, progress = _resumed(_file(), questions, 2)
    assert done == {"q1": {0, 1}, "q2": {0}}
    assert (progress.resumed, progress.plans_done, progress.questions_done, progress.plans_total) == (3, 3, 1, 4)


def _config(**kw):
    return RunConfig(task="t", **kw)


def test_run_file_is_written_stamped_and_a_resume_may_grow(tmp_path):
    settle_run_file(tmp_path / "run", _config(n_plans=2), rollout_differences, stamp=True)
    data = json.loads((tmp_path / "run" / "run.json").read_text())
    assert data["n_plans"] == 2 and "created" in data
    settle_run_file(tmp_path / "run", _config(n_plans=4, n_questions=50), rollout_differences, stamp=True)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["n_plans"] == 4


def test_other_settings_are_refused_and_the_file_is_left_alone(tmp_path):
    settle_run_file(tmp_path, _config(temperature=0.5), rollout_differences)
    before = (tmp_path / "run.json").read_text()
    with pytest.raises(ConfigError, match=r"temperature: 0.5 -> 0.9"):
        settle_run_file(tmp_path, _config(temperature=0.9), rollout_differences)
    assert (tmp_path / "run.json").read_text() == before


def test_a_resume_with_the_same_settings_leaves_the_file_as_it_was(tmp_path):
    settle_run_file(tmp_path, _config(n_plans=2), rollout_differences, stamp=True)
    path = tmp_path / "run.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "created": "2000-01-01T00:00:00+00:00"}, indent=2) + "\n")
    before = path.read_bytes()
    settle_run_file(tmp_path, _config(n_plans=2), rollout_differences, stamp=True)
    assert path.read_bytes() == before
    settle_run_file(tmp_path, _config(n_plans=4), rollout_differences, stamp=True)  # grown: rewritten, same stamp
    assert json.loads(path.read_text())["created"] == "2000-01-01T00:00:00+00:00"


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe",
        b'{"task": 3}',
        b'{"task": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"task": "t", "seed": ' + b"9" * 5000 + b"}",
    ],
)
def test_an_unreadable_run_file_is_one_error(tmp_path, content):
    (tmp_path / "run.json").write_bytes(content)
    with pytest.raises(RunFileError, match="not a valid run config"):
        settle_run_file(tmp_path, _config(), rollout_differences)


def test_a_run_config_is_read_by_the_run_folders_one_reader(tmp_path):
    settle_run_file(tmp_path / "run", _config(n_plans=3), rollout_differences, stamp=True)
    assert read_run_config(tmp_path / "run") == _config(n_plans=3)  # the stamp is the file's, not the config's
    with pytest.raises(RunFileError, match="has no run.json") as info:
        read_run_config(tmp_path / "elsewhere")
    assert "orchrm rollout" in (info.value.hint or "")
    (tmp_path / "run" / "run.json").write_text('{"task": 3}')
    with pytest.raises(RunFileError, match="not a valid run config"):
        read_run_config(tmp_path / "run")


def test_opening_a_run_file_writes_nothing_until_asked(tmp_path):
    run_file = open_run_file(tmp_path / "run", _config(n_plans=2), rollout_differences, stamp=True)
    assert run_file.new and not (tmp_path / "run" / "run.json").exists()
    run_file.write()
    before = (tmp_path / "run" / "run.json").read_bytes()
    grown = open_run_file(tmp_path / "run", _config(n_plans=4), rollout_differences, stamp=True)
    assert not grown.new and grown.config.n_plans == 4 and (tmp_path / "run" / "run.json").read_bytes() == before
    grown.write()
    assert json.loads((tmp_path / "run" / "run.json").read_text())["n_plans"] == 4


def test_skipped_questions_are_the_splits_first_and_growing_extends_the_same_list():
    from orchrm.mas.run_folder import run_questions
    from orchrm.tasks import load_task

    task = load_task("chain_sum")
    first = [q.id for q in run_questions(task, 8, "test", 0)]
    held = [q.id for q in run_questions(task, 3, "test", 0, skip=5)]
    assert held == first[5:8]
    assert [q.id for q in run_questions(task, 2, "test", 0, skip=5)] == held[:2]


def test_a_resume_cannot_change_which_questions_were_skipped(tmp_path):
    settle_run_file(tmp_path, _config(skip_questions=150), rollout_differences)
    with pytest.raises(ConfigError, match=r"skip_questions: 150 -> 0"):
        settle_run_file(tmp_path, _config(), rollout_differences)
