"""`orchrm counterfactual` against a fake served model: collect, resume asking nothing, pair, refuse bad input."""

import json

import pytest

from mas_fakes import make_task
from orchrm.cli.app import main
from orchrm.cli.counterfactual import agent_target
from orchrm.cli.options import ModelOptions
from orchrm.mas.traces import read_traces

TWO = json.dumps(
    {
        "agents": [
            {"id": "a", "type": "cot", "input": "Find the sum."},
            {"id": "b", "type": "cot", "input": "Check ${a}"},
        ]
    }
)


def _exit(argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code or 0


@pytest.fixture
def run(fake, tmp_path):
    fake.default_text = TWO + "\nAnswer: 4"
    make_task(tmp_path)
    argv = [
        "rollout",
        "--task",
        f"jsonl:{tmp_path / 'qs.jsonl'}",
        "--out",
        str(tmp_path / "run"),
        "--n-questions",
        "2",
        "--n-plans",
        "2",
        "--backend",
        "openai",
        "--base-url",
        fake.url,
        "--api-key-env",
        "HOME",
        "--quiet",
    ]
    assert _exit(argv) == 0
    return tmp_path / "run"


def _args(fake, run, out, *more):
    return [
        "counterfactual",
        "--run",
        str(run),
        "--out",
        str(out),
        "--backend",
        "openai",
        "--base-url",
        fake.url,
        "--api-key-env",
        "HOME",
        "--no-cache",
        *more,
    ]


def test_collect_resume_and_pair(fake, run, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "cf"
    capsys.readouterr()
    assert _exit(_args(fake, run, out, "--edits-per-plan", "2", "--kinds", "paraphrase,drop-hop", "--json")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["plans"], summary["edits"], summary["done"], summary["resumed"]) == (4, 8, 8, 0)
    assert summary["executed"] == 8 and summary["tokens"] > 0
    traces = read_traces(out / "traces.jsonl")
    assert len(traces) == 8 and all(t.tokens["execute"].total_tokens > 0 for t in traces)
    asked = len(fake.requests)
    assert _exit(_args(fake, run, out, "--edits-per-plan", "2", "--kinds", "paraphrase,drop-hop", "--json")) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["done"], again["resumed"]) == (0, 8)
    assert all("messages" not in r for r in fake.requests[asked:])  # nothing executed again (at most a ping)

    assert _exit(["pairs", str(run), "--out", str(tmp_path / "pairs"), "--counterfactual", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "counterfactual edits" in shown and "paraphrase" in shown and "drop-hop" in shown
    stats = json.loads((tmp_path / "pairs" / "stats.json").read_text())
    assert {k: v["tried"] for k, v in stats["edits"].items()} == {"paraphrase": 4, "drop-hop": 4}
    # the fake answers 4 whatever the plan: every edit keeps its outcome, so none gives a pair
    assert all(v["same_outcome"] == 4 and v["paired"] == 0 for v in stats["edits"].values())


@pytest.mark.parametrize(
    ("flag", "value", "needle"),
    [
        ("--kinds", "shuffle", "unknown edit kind shuffle"),
        ("--edits-per-plan", "0", "--edits-per-plan"),
        ("--max-plans", "0", "--max-plans"),
        ("--parallel", "0", "--parallel"),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(fake, run, tmp_path, capsys, flag, value, needle):
    assert _exit(_args(fake, run, tmp_path / "cf", flag, value)) == 1
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "cf").exists()


def test_another_agent_model_is_refused(fake, run, tmp_path, capsys):
    assert _exit(_args(fake, run, tmp_path / "cf", "--model", "someone-else")) == 1
    err = capsys.readouterr().err
    assert "someone-else" in err and "Traceback" not in err and not (tmp_path / "cf").exists()


def test_a_folder_that_is_not_a_run_is_one_line(fake, tmp_path, capsys):
    assert _exit(_args(fake, tmp_path / "nowhere", tmp_path / "cf")) == 1
    assert "run.json" in capsys.readouterr().err


def test_the_agent_model_is_named_as_rollout_names_it():
    def target(backend, model, base_url, agent_backend, agent_model, agent_base_url):
        return agent_target(
            ModelOptions(
                backend=backend,
                model=model,
                base_url=base_url,
                agent_backend=agent_backend,
                agent_model=agent_model,
                agent_base_url=agent_base_url,
            )
        )

    assert target("openai", "big", "http://a/v1", None, None, None) == ("openai", "big", "http://a/v1")
    assert target("openai", "big", "http://a/v1", None, "small", None) == ("openai", "small", "http://a/v1")
    assert target("openai", "big", "http://a/v1", None, None, "http://b/v1") == ("openai", None, "http://b/v1")
    assert target("local", "big", None, "openai", None, "http://b/v1") == ("openai", None, "http://b/v1")
