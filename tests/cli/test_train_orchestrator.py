"""`orchrm train-orchestrator` as a user runs it, on a tiny policy and a tiny RM."""

import json

import pytest
from typer.testing import CliRunner

from mas_fakes import make_task
from orchrm.cli.app import app
from orchrm.errors import ConfigError
from tiny_policy import tiny_policy, tiny_rm

runner = CliRunner()


@pytest.fixture
def setup(tmp_path):
    make_task(tmp_path)  # writes qs.jsonl
    return {
        "task": f"jsonl:{tmp_path / 'qs.jsonl'}",
        "policy": tiny_policy(tmp_path / "policy"),
        "rm": tiny_rm(tmp_path / "rm", tasks=["chain_sum"]),
        "out": tmp_path / "run",
    }


def args(s, *extra):
    return [
        "train-orchestrator",
        "--task",
        s["task"],
        "--policy",
        str(s["policy"]),
        "--out",
        str(s["out"]),
        "--steps",
        "1",
        "--save-steps",
        "1",
        "--group-size",
        "2",
        "--n-questions",
        "2",
        "--plan-max-tokens",
        "8",
        "--penalty",
        "-3",
        *extra,
    ]


def test_rm_reward_trains_warns_about_the_rm_task_and_writes_the_run(setup):
    result = runner.invoke(app, args(setup, "--reward", "rm", "--rm", str(setup["rm"])), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "trained on chain_sum" in result.output and "may not transfer" in result.output
    out = setup["out"]
    assert (out / "adapter" / "adapter_model.safetensors").is_file()
    assert (out / "checkpoints" / "checkpoint-1" / "orchrm-checkpoint.json").is_file()
    run = json.loads((out / "run.json").read_text())
    assert run["reward"] == "rm" and run["invalid_penalty"] == -3 and len(run["rm_sha256"]) == 64
    assert run["sampler"] == "trl"  # --sampler auto: a transformers-folder policy has no GGUF for llama-server
    assert "per step (trl sampler, 1 steps): generation" in result.output and (out / "steps.jsonl").is_file()
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2  # a random policy writes no valid plan: each gets the penalty, recorded with its rule
    assert all(
        (s["valid"] and 0 < s["reward"] < 1) or (not s["valid"] and s["reward"] == -3 and s["rule"]) for s in samples
    )
    tokens = json.loads((out / "tokens.json").read_text())["categories"]
    assert tokens["plan"]["calls"] == 2 and tokens["train"]["calls"] == 2
    assert "plan" in result.output and "adapter:" in result.output


def test_reward_options_that_do_not_fit_are_refused_before_any_model_loads(setup):
    result = runner.invoke(app, args(setup, "--reward", "rm"))
    assert isinstance(result.exception, ConfigError) and "--rm DIR" in str(result.exception)
    result = runner.invoke(app, args(setup, "--reward", "execute", "--rm", str(setup["rm"])))
    assert isinstance(result.exception, ConfigError) and not setup["out"].exists()


def test_json_mode_reports_steps_as_lines_and_the_result_as_one_object(setup):
    result = runner.invoke(app, args(setup, "--rm", str(setup["rm"]), "--device", "cpu", "--steps", "2", "--json"))
    assert result.exit_code == 0, result.output + repr(result.exception)
    lines = result.stdout.strip().splitlines()
    outcome = json.loads(lines[-1])
    assert outcome["steps"] == 2 and outcome["adapter"].endswith("adapter") and len(outcome["timings"]) == 2
    assert outcome["tokens"]["categories"]["plan"]["calls"] == 4
    lines = [json.loads(x) for x in result.stderr.splitlines() if x.startswith("{")]
    steps = [x for x in lines if x.get("stage") == "GRPO steps"]
    assert steps[-1]["finished"] and steps[-1]["done"] == steps[-1]["total"] == 2
    assert steps[0]["done"] == 0 and "step 1 running" in steps[0]["info"]  # a line before the first step ends
    assert lines[0]["note"].startswith("loading the policy") and "reward model" in lines[0]["note"]  # before it loads
    assert lines[1]["note"].startswith("GRPO steps: preparing the trainer")
    assert steps[-1]["tokens"] == outcome["tokens"]["total"]["total_tokens"] and "reward -3.000" in steps[-1]["info"]
    assert "\r" not in result.stderr
