"""The rollout and show verbs: rendering, and bad input answered by one clear line."""

import asyncio
import json

import pytest
from typer.testing import CliRunner

from mas_fakes import make_task, replies, run_config, scripted_llm  # noqa: E402
from orchrm.cli.app import app  # noqa: E402
from orchrm.mas.rollout import arollout  # noqa: E402

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
    result = runner.invoke(
        app, ["show", str(run_dir / "traces.jsonl"), "--question", "q1", "--plan", "0"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "final answer: 2" in out and "correct" in out
    assert "self_consistency" in out and "votes" in out
    # `${a}` resolves to agent a's answer, not its whole output
    assert "Check unknown" in out and "Check I only have" not in out


def test_show_renders_an_invalid_plan(run_dir):
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    bad = next(i for i, t in enumerate(traces) if t["plan"] is None)
    result = runner.invoke(app, ["show", str(run_dir), "-i", str(bad)], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "invalid plan" in result.output and "{ this is not a plan" in result.output


def test_show_bad_index_and_missing_question(run_dir, capsys):
    from orchrm.cli.app import main

    for argv, message in (
        [["show", str(run_dir), "-i", "99"], "out of range"],
        [["show", str(run_dir), "--question", "zz"], "no trace"],
    ):
        with pytest.raises(SystemExit):
            main(argv)
        assert message in capsys.readouterr().err


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
    ("flag", "value"),
    [
        ("--execute", "some"),
        ("--degree", "huge"),
        ("--split", "dev"),
        ("--n-plans", "0"),
        ("--agent-max-samples", "1"),
        ("--agent-timeout", "0"),
        ("--top-p", "2"),
    ],
)
def test_rollout_bad_options_are_one_line(flag, value, capsys, tmp_path):
    from orchrm.cli.app import main

    with pytest.raises(SystemExit) as info:
        main(["rollout", "--task", "gsm_symbolic", "--out", str(tmp_path / "r"), flag, value])
    err = capsys.readouterr().err
    # a value outside a field's choices is click's usage error (2); one its config refuses, orchrm's error (1)
    assert info.value.code in (1, 2) and flag in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


# --- orchestrator and sub-agents on separate servers ----------------------------------------------------

SINGLE = json.dumps({"agents": [{"id": "a", "type": "cot", "input": "Add the two numbers."}], "edges": []})


@pytest.fixture
def two_servers():
    from fake_openai import FakeOpenAI

    planner, worker = FakeOpenAI(SINGLE, model="planner"), FakeOpenAI("Answer: 4", model="worker")
    planner.start(), worker.start()
    yield planner, worker
    planner.stop(), worker.stop()


def _dead_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _rollout_args(tmp_path, *llm_args):
    make_task(tmp_path)
    return [
        "rollout",
        "--task",
        f"jsonl:{tmp_path / 'qs.jsonl'}",
        "--out",
        str(tmp_path / "r"),
        "--n-questions",
        "2",
        "--n-plans",
        "2",
        "--degree",
        "single",
        "--api-key-env",
        "HOME",
        *llm_args,
    ]


def test_rollout_on_two_servers_then_resume_asks_neither(two_servers, tmp_path):
    from orchrm.cli.app import main
    from orchrm.mas.traces import read_traces

    planner, worker = two_servers
    argv = _rollout_args(
        tmp_path,
        "--orchestrator-backend",
        "openai",
        "--orchestrator-base-url",
        planner.url,
        "--agent-base-url",
        worker.url,
    )
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code is None or info.value.code == 0
    # 2 questions x 2 plans: one request per question, for both of its plans
    assert len(planner.requests) == 2 and all("orchestrator" in r["messages"][0]["content"] for r in planner.requests)
    assert all(r["n"] == 2 for r in planner.requests)
    assert worker.requests and not any("orchestrator" in r["messages"][0]["content"] for r in worker.requests)
    traces = read_traces(tmp_path / "r" / "traces.jsonl")
    assert {(t.orchestrator.model_id, t.agent_backend, t.agent_model_id) for t in traces} == {
        (f"planner@{planner.url}", "openai", f"worker@{worker.url}")
    }
    run = json.loads((tmp_path / "r" / "run.json").read_text())
    assert (run["model_id"], run["agent_model_id"]) == (f"planner@{planner.url}", f"worker@{worker.url}")
    asked = len(planner.requests), len(worker.requests)
    with pytest.raises(SystemExit):
        main(argv)  # resumed: every (question, plan) is on disk
    assert (len(planner.requests), len(worker.requests)) == asked


def test_agent_model_on_the_orchestrators_server(fake, tmp_path):
    from orchrm.cli.app import main

    fake.default_text = SINGLE + "\nAnswer: 4"
    argv = _rollout_args(
        tmp_path, "--backend", "openai", "--base-url", fake.url, "--model", "big", "--agent-model", "small"
    )
    with pytest.raises(SystemExit):
        main(argv)
    models = {("orchestrator" in r["messages"][0]["content"], r["model"]) for r in fake.requests}
    assert models == {(True, "big"), (False, "small")}


@pytest.mark.parametrize("role", ["orchestrator", "agent"])
def test_unreachable_model_is_one_line_naming_the_role_and_nothing_is_written(role, fake, tmp_path, capsys):
    from orchrm.cli.app import main

    dead = _dead_url()
    urls = (dead, fake.url) if role == "orchestrator" else (fake.url, dead)
    argv = _rollout_args(tmp_path, "--backend", "openai", "--base-url", urls[0], "--agent-base-url", urls[1])
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert info.value.code == 1 and f"{role} model at {dead} is not reachable" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "r").exists() and fake.requests == []


def test_show_names_the_agent_model_when_it_differs(tmp_path):
    from orchrm.llm import LLM
    from orchrm.llm.scripted import ScriptedBackend

    big = LLM(ScriptedBackend([replies()], name="big"))
    small = LLM(ScriptedBackend([replies()], name="small"))
    out = tmp_path / "two"
    asyncio.run(arollout(make_task(tmp_path), big, out, run_config(n_questions=1), agent_llm=small))
    result = runner.invoke(app, ["show", str(out), "-i", "0"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "orchestrator scripted/big" in result.output
    assert "sub-agents scripted/small" in result.output


def test_show_says_nothing_of_agents_on_the_orchestrators_model(run_dir):
    result = runner.invoke(app, ["show", str(run_dir), "-i", "0"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "sub-agents" not in result.output


@pytest.mark.parametrize("context", ["final", "all"])
def test_agent_context_reaches_the_sub_agents(context, fake, tmp_path):
    from orchrm.cli.app import main

    fake.default_text = SINGLE + "\nAnswer: 4"
    argv = _rollout_args(tmp_path, "--backend", "openai", "--base-url", fake.url, "--agent-context", context)
    with pytest.raises(SystemExit):
        main(argv)
    assert json.loads((tmp_path / "r" / "run.json").read_text())["agent_context"] == context


def test_rollout_json_prints_the_result_on_stdout_and_progress_on_stderr(fake, tmp_path, capsys):
    from orchrm.cli.app import main

    fake.default_text = SINGLE + "\nAnswer: 4"
    with pytest.raises(SystemExit):
        main([*_rollout_args(tmp_path, "--backend", "openai", "--base-url", fake.url), "--json"])
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["traces"] == 4 and summary["resumed"] == 0 and summary["tokens"] > 0
    finished = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    assert any(r.get("stage") == "rollout plans" and r["finished"] and r["done"] == 4 for r in finished)


def test_rollout_quiet_prints_only_the_result(fake, tmp_path, capsys):
    from orchrm.cli.app import main

    fake.default_text = SINGLE + "\nAnswer: 4"
    with pytest.raises(SystemExit):
        main([*_rollout_args(tmp_path, "--backend", "openai", "--base-url", fake.url), "--quiet"])
    captured = capsys.readouterr()
    assert captured.err == "" and "4 traces" in captured.out
