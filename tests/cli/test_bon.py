"""`orchrm bon` against a real HTTP (fake OpenAI) server: the table, the report, and bad input."""

import json

import pytest

from mas_fakes import make_task
from orchrm.cli.app import main

PLAN = json.dumps({"agents": [{"id": "a", "type": "cot", "input": "Add them."}], "edges": []})


def args(fake, task, rm_dir, out, *extra):
    return [
        "bon",
        "--task",
        f"jsonl:{task}",
        "--rm",
        str(rm_dir),
        "--out",
        str(out),
        "--n",
        "2",
        "--n-questions",
        "2",
        "--backend",
        "openai",
        "--base-url",
        fake.url,
        "--model",
        "fake-model",
        "--api-key-env",
        "HOME",
        *extra,
    ]


def test_bon_prints_the_comparison_and_writes_the_report(fake, tmp_path, rm_dir, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    fake.default_text = PLAN + "\nAnswer: 4"  # a valid plan for the orchestrator; "4" for every agent
    make_task(tmp_path)
    task = tmp_path / "qs.jsonl"
    with pytest.raises(SystemExit) as info:
        main(args(fake, task, rm_dir, tmp_path / "bon", "--no-judge"))
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "best-of-N on 2 held-out" in out and "rm-adaptive" in out and "oracle" in out
    assert "trained on synthetic" in out  # the RM's card names another task
    assert "content headroom" in out and "same-shape AUC of rm" in out  # does content decide, is it read
    assert (tmp_path / "bon" / "report.html").exists() and (tmp_path / "bon" / "accuracy_vs_n.png").exists()
    results = json.loads((tmp_path / "bon" / "results.json").read_text())
    assert results["questions"] == 2 and "judge" not in results["methods"]


def test_bon_json_is_the_results_object_on_stdout(fake, tmp_path, rm_dir, capsys):
    fake.default_text = PLAN + "\nAnswer: 4"
    make_task(tmp_path)
    with pytest.raises(SystemExit) as info:
        main([*args(fake, tmp_path / "qs.jsonl", rm_dir, tmp_path / "bon", "--no-judge"), "--json"])
    assert info.value.code == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)  # stdout is exactly one JSON object: no table, no warning
    on_disk = json.loads((tmp_path / "bon" / "results.json").read_text())
    assert summary["methods"] == on_disk["methods"] and summary["files"]["results"].endswith("results.json")
    assert "trained on synthetic" in captured.err


def test_bon_with_too_many_held_out_questions_is_one_line(fake, tmp_path, rm_dir, capsys):
    make_task(tmp_path)
    task = tmp_path / "qs.jsonl"
    with pytest.raises(SystemExit) as info:
        main([*args(fake, task, rm_dir, tmp_path / "bon"), "--n-questions", "999"])
    err = capsys.readouterr().err
    assert info.value.code == 1 and "test questions" in err and "Traceback" not in err


def test_bon_runs_agents_on_the_agent_model(fake, tmp_path, rm_dir, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    fake.default_text = PLAN + "\nAnswer: 4"
    make_task(tmp_path)
    argv = args(fake, tmp_path / "qs.jsonl", rm_dir, tmp_path / "bon", "--no-judge", "--agent-model", "small")
    argv[argv.index("--model")] = "--orchestrator-model"  # the new name of the old option
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    models = {("orchestrator" in r["messages"][0]["content"], r["model"]) for r in fake.requests}
    assert models == {(True, "fake-model"), (False, "small")}
    results = json.loads((tmp_path / "bon" / "results.json").read_text())
    assert (results["model"], results["agent_model"]) == (f"fake-model@{fake.url}", f"small@{fake.url}")
    assert f"sub-agents: `small@{fake.url}`" in (tmp_path / "bon" / "report.md").read_text()
