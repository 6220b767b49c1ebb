"""The rollout and show verbs: rendering, and bad input answered by one clear line."""

import asyncio
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchrm.cli.app import app  # noqa: E402
from orchrm.mas.rollout import arollout  # noqa: E402
from mas_fakes import make_task, replies, run_config, scripted_llm  # noqa: E402

runner = CliRunner()


@pytest.fixture
def run_dir(tmp_path):
    out = tmp_path / "run"
    asyncio.run(arollout(make_task(tmp_path), scripted_llm(replies()), out, run_config()))
    return out


def test_show_lists_a_run(run_dir):
    result = runner.invoke(app, ["show", str(run_dir)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "6 traces" in result.output and "cot,self_consistency" in result.output and "parse" in result.output


def test_show_renders_one_trace(run_dir):
    result = runner.invoke(app, ["show", str(run_dir / "traces.jsonl"), "--question", "q1", "--plan", "0"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "final answer: 2" in out and "correct" in out
    assert "self_consistency" in out and "votes" in out and "Check Answer: 2" in out


def test_show_renders_an_invalid_plan(run_dir):
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    bad = next(i for i, t in enumerate(traces) if t["plan"] is None)
    result = runner.invoke(app, ["show", str(run_dir), "-i", str(bad)], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "invalid plan" in result.output and "{ this is not a plan" in result.output


def test_show_bad_index_and_missing_question(run_dir):
    from orchrm.cli.app import main

    for argv, message in ([["show", str(run_dir), "-i", "99"], "out of range"], [["show", str(run_dir), "--question", "zz"], "no trace"]):
        with pytest.raises(SystemExit):
            main(argv)


def test_corrupt_run_folder_is_one_line_naming_file_and_line(run_dir, capsys):
    from orchrm.cli.app import main

    path = run_dir / "traces.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = "garbage"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as info:
        main(["show", str(run_dir)])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert "traces.jsonl:3" in err and "Traceback" not in err


def test_rollout_unknown_task_is_one_line(capsys):
    from orchrm.cli.app import main

    with pytest.raises(SystemExit) as info:
        main(["rollout", "--task", "nope", "--out", "/tmp/never"])
    assert info.value.code == 1 and "unknown task" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value"), [("--execute", "some"), ("--degree", "huge"), ("--split", "dev"), ("--n-plans", "0")]
)
def test_rollout_bad_options_are_one_line(flag, value, capsys, tmp_path):
    from orchrm.cli.app import main

    with pytest.raises(SystemExit) as info:
        main(["rollout", "--task", "gsm_symbolic", "--out", str(tmp_path / "r"), flag, value])
    err = capsys.readouterr().err
    assert info.value.code == 1 and flag in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()
