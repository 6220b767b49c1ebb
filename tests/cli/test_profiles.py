"""One set of defaults and the `demo` profile: `orchrm demo` runs with it unchanged, `orchrm bon --profile demo`
selects exactly as the demo's best-of-N, a given option and `--config` win over it, and the run records it."""

import re

import pytest

from orchrm.cli.app import main
from orchrm.loop import LoopConfig
from orchrm.mas.run_config import RolloutSettings
from orchrm.profiles import PROFILES, profiled

#: `LoopConfig()` as `orchrm demo` ran it before the profile (commit 45fafdd), field by field; `n` is now
#: `n_plans` (no longer copied into `bon`), and the profile's name is recorded.
DEMO_BEFORE = {
    "task": "mix:world_qa,chain_sum",
    "train_questions": 20,
    "test_questions": 16,
    "n_plans": 4,
    "parallel_questions": 2,
    "profile": "demo",
    "rollout": {
        "seed": 0,
        "degree": "dag",
        "temperature": 0.9,
        "top_p": 0.95,
        "plan_max_tokens": 320,
        "prompt_examples": True,
        "constrained": True,
        "agent_max_tokens": 192,
        "agent_temperature": 0.0,
        "agent_sample_temperature": 0.7,
        "agent_timeout_s": 900.0,
        "agent_max_samples": 3,
        "agent_max_rounds": 1,
        "agent_context": "final",
    },
    "rm": {
        "backbone": "all-minilm-l6-v2",
        "max_length": 256,
        "epochs": 6,
        "batch_size": 8,
        "learning_rate": 5e-05,
        "weight_decay": 0.0,
        "warmup_ratio": 0.1,
        "margins": {},
        "center_rewards_coefficient": 0.01,
        "early_stopping_patience": 2,
        "lora": False,
        "lora_r": 8,
        "bf16": False,
        "seed": 0,
        "threads": None,
        "device": "cpu",
        "report_to": "none",
    },
    "bon": {
        "judge": True,
        "judge_max_steps": 2,
        "judge_max_tokens": 192,
        "judge_ns": [],
        "judge_concurrency": 2,
        "tau": 0.5,
        "taus": [0.0, 0.25, 0.5, 1.0, 2.0],
        "resamples": 2000,
        "seed": 0,
        "prior_strength": 2.0,
    },
}


def _fake_llms(*args, **kw):
    from contextlib import contextmanager

    from orchrm.llm import LLM
    from orchrm.llm.scripted import ScriptedBackend

    @contextmanager
    def opened():
        llm = LLM(ScriptedBackend(["x"]), cache=None)
        yield llm, llm

    return opened()


class Stop(Exception):
    pass


def _demo(monkeypatch, tmp_path, *argv):
    """The `LoopConfig` `orchrm demo` would run with."""
    seen = []

    def stop(task, llm, out, config, **kw):
        seen.append(config)
        raise Stop

    monkeypatch.setattr("orchrm.cli.demo.arun_loop", stop)
    monkeypatch.setattr("orchrm.cli.demo.asyncio.run", lambda coroutine: coroutine)
    monkeypatch.setattr("orchrm.cli.llms.run_llms", _fake_llms)
    with pytest.raises(Stop):
        main(["demo", "--out", str(tmp_path / "demo"), *argv])
    return seen[0]


def _bon(monkeypatch, tmp_path, *argv):
    """The (RunConfig, BonConfig) `orchrm bon` would run with."""
    seen = []

    def stop(task, llm, rm, out, run_config, config, **kw):
        seen.append((run_config, config))
        raise Stop

    monkeypatch.setattr("orchrm.rm.model.RewardModel.load", lambda *a, **kw: None)
    monkeypatch.setattr("orchrm.cli.bon.abon", stop)
    monkeypatch.setattr("orchrm.cli.bon.asyncio.run", lambda coroutine: coroutine)
    monkeypatch.setattr("orchrm.cli.llms.run_llms", _fake_llms)
    with pytest.raises(Stop):
        main(["bon", "--task", "mix:world_qa,chain_sum", "--rm", str(tmp_path), "--out", str(tmp_path / "b"), *argv])
    return seen[0]


def test_demo_runs_as_before_the_profile_field_by_field(monkeypatch, tmp_path):
    config = _demo(monkeypatch, tmp_path)
    assert config.model_dump(mode="json") == DEMO_BEFORE
    assert config == profiled(LoopConfig, "demo")  # the library's way to the same settings


def test_bon_with_the_demo_profile_selects_exactly_as_the_demos_best_of_n(monkeypatch, tmp_path):
    loop = _demo(monkeypatch, tmp_path)
    run, config = _bon(monkeypatch, tmp_path, "--profile", "demo", "--n-questions", str(loop.test_questions))
    demo_run = loop.run_config("test", run.model_id, backend=run.backend, model_name=run.model_name)
    assert run.model_name == run.model_id == "scripted-model"  # the name the report shows, from the backend
    assert run.model_dump() == demo_run.model_dump()
    assert config == loop.bon


def test_without_a_profile_every_verb_has_the_shared_defaults(monkeypatch, tmp_path):
    loop = _demo(monkeypatch, tmp_path, "--profile", "base")
    run, config = _bon(monkeypatch, tmp_path)
    shared = RolloutSettings().model_dump()
    assert loop.rollout.model_dump() == shared == {k: getattr(run, k) for k in shared}
    assert (loop.bon.judge_max_steps, loop.bon.judge_max_tokens) == (config.judge_max_steps, config.judge_max_tokens)
    assert (loop.rm.epochs, loop.profile, run.profile) == (4, "base", "base")


def test_an_option_given_and_a_config_file_win_over_the_profile(monkeypatch, tmp_path):
    (tmp_path / "c.yaml").write_text("temperature: 0.3\njudge-steps: 5\n")
    run, config = _bon(
        monkeypatch, tmp_path, "--config", str(tmp_path / "c.yaml"), "--profile", "demo", "--n-plans", "6"
    )
    assert (run.temperature, config.judge_max_steps, run.n_plans) == (0.3, 5, 6)
    assert (run.plan_max_tokens, config.judge_max_tokens, run.profile) == (320, 192, "demo")


def test_the_old_n_flag_still_works_hidden_and_an_unknown_profile_is_named(monkeypatch, tmp_path, capsys):
    run, _ = _bon(monkeypatch, tmp_path, "--n", "3")
    assert run.n_plans == 3
    assert _demo(monkeypatch, tmp_path, "--n", "5").n_plans == 5
    for verb in (_bon, _demo):  # both names given: one line, in either order (typer's own click once hid it)
        for both in (["--n", "3", "--n-plans", "5"], ["--n-plans", "5", "--n", "3"]):
            with pytest.raises(SystemExit):
                verb(monkeypatch, tmp_path, *both)
            assert "--n-plans and --n are one option" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bon", "--help"])
    shown = capsys.readouterr().out
    assert "--n-plans" in shown and "--n " not in shown and "demo: constrained=True" in shown
    with pytest.raises(SystemExit):
        main(["demo", "--profile", "fast", "--out", str(tmp_path / "x")])
    assert "no profile 'fast'" in capsys.readouterr().err


def test_train_rm_takes_the_profiles_epochs(monkeypatch, tmp_path):
    seen = []

    def stop(pairs_dir, out, config, **kw):
        seen.append(config)
        raise Stop

    monkeypatch.setattr("orchrm.rm.train.train_from_folder", stop)
    for argv in (["--profile", "demo"], ["--profile", "demo", "--epochs", "2"], []):
        with pytest.raises(Stop):
            main(["train-rm", str(tmp_path), "--out", str(tmp_path / "rm"), *argv])
    assert [c.epochs for c in seen] == [PROFILES["demo"]["epochs"], 2, 4]


def _train_orchestrator(monkeypatch, tmp_path, *argv):
    """The (GRPORunConfig, AgentOptions) `orchrm train-orchestrator` would train with."""
    seen = []

    def stop(progress, settings, out, *, agents, **kw):
        seen.append((settings, agents))
        raise Stop

    monkeypatch.setattr("orchrm.cli.train_orchestrator._train", stop)
    with pytest.raises(Stop):
        main(["train-orchestrator", "--task", "chain_sum", "--out", str(tmp_path / "t"), "--reward", "valid", *argv])
    return seen[0]


def test_train_orchestrator_takes_the_profiles_plan_and_agent_settings(monkeypatch, tmp_path):
    (tmp_path / "c.yaml").write_text("plan-max-tokens: 256\n")
    demo, agents = _train_orchestrator(monkeypatch, tmp_path, "--profile", "demo")
    loop = profiled(LoopConfig, "demo")
    assert (demo.temperature, demo.plan_max_tokens) == (loop.rollout.temperature, loop.rollout.plan_max_tokens)
    assert agents.max_tokens == loop.rollout.agent_max_tokens and demo.profile == "demo"  # run.json records it
    given, agents = _train_orchestrator(
        monkeypatch, tmp_path, "--profile", "demo", "--config", str(tmp_path / "c.yaml"), "--temperature", "0.5"
    )
    assert (given.temperature, given.plan_max_tokens, agents.max_tokens) == (0.5, 256, loop.rollout.agent_max_tokens)
    base, agents = _train_orchestrator(monkeypatch, tmp_path)
    shared = RolloutSettings()
    assert base.profile == "base"
    assert (base.temperature, base.plan_max_tokens, agents.max_tokens) == (
        shared.temperature,
        shared.plan_max_tokens,
        shared.agent_max_tokens,
    )


def shown_defaults(help_text: str) -> dict[str, str]:
    """Each option's default as `--help` shows it: first flag -> the text in `[default: ...]`."""
    blocks: dict[str, str] = {}
    flag = None
    for line in help_text.splitlines():
        if line.lstrip().startswith("-") and line.startswith("  -"):
            flag = line.split()[0]
            blocks[flag] = ""
        if flag is not None:
            blocks[flag] += " " + line.strip()
    found = {f: re.search(r"\[default: ([^\]]+)\]", b) for f, b in blocks.items()}
    return {f: m.group(1) for f, m in found.items() if m}


def _help(capsys, *argv) -> dict[str, str]:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return shown_defaults(capsys.readouterr().out)


def _runs_with(name: str) -> dict[str, str]:
    """What `orchrm demo --profile NAME` runs with, written as `--help` writes a default."""
    c = profiled(LoopConfig, name)
    return {
        "--temperature": str(c.rollout.temperature),
        "--plan-max-tokens": str(c.rollout.plan_max_tokens),
        "--agent-max-tokens": str(c.rollout.agent_max_tokens),
        "--constrained": "constrained" if c.rollout.constrained else "no-constrained",
        "--epochs": str(c.rm.epochs),
        "--judge-steps": str(c.bon.judge_max_steps),
    }


def test_demo_help_shows_the_values_the_demo_runs_with(capsys, tmp_path):
    wanted, shown = _runs_with("demo"), _help(capsys, "demo")
    assert {f: shown.get(f) for f in wanted} == wanted and shown["--profile"] == "demo"
    base = _runs_with("base")
    assert wanted != base  # else the test shows nothing
    assert {f: _help(capsys, "demo", "--profile", "base").get(f) for f in base} == base
    (tmp_path / "c.yaml").write_text("profile: base\nepochs: 3\n")
    from_file = _help(capsys, "demo", "--config", str(tmp_path / "c.yaml"))
    assert {f: from_file.get(f) for f in base} == {**base, "--epochs": "3"} and from_file["--profile"] == "base"
    assert _help(capsys, "bon", "--profile", "demo")["--constrained"] == "constrained"
    assert _help(capsys, "bon")["--constrained"] == "no-constrained"


def test_train_orchestrator_help_shows_the_profile_it_is_given(capsys):
    shown = _help(capsys, "train-orchestrator", "--profile", "demo")
    demo = PROFILES["demo"]
    assert (shown["--plan-max-tokens"], shown["--agent-max-tokens"]) == (
        str(demo["plan_max_tokens"]),
        str(demo["agent_max_tokens"]),
    )
    assert _help(capsys, "train-orchestrator")["--plan-max-tokens"] == str(RolloutSettings().plan_max_tokens)
