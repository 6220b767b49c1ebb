"""`setup_run`: a training run's reward, agents, weights and sampler resolved from plain settings."""

from pathlib import Path

import pytest

from live_server import free_port
from mas_fakes import make_task
from orchrm.errors import BackendUnreachable, ConfigError
from orchrm.grpo import AgentOptions, ExecuteScorer, GRPORunConfig, setup_run


def test_the_execute_reward_gets_reachable_agents_that_count_into_the_run_ledger(tmp_path, policy_dir, fake):
    make_task(tmp_path)  # writes qs.jsonl
    settings = GRPORunConfig(task=f"jsonl:{tmp_path / 'qs.jsonl'}", policy=str(policy_dir), reward="execute", seed=3)
    agents = AgentOptions(backend="openai", model="small", base_url=fake.url, api_key_env="HOME", max_tokens=50)
    with setup_run(settings, tmp_path / "run", sampler="trl", agents=agents) as run:
        assert isinstance(run.scorer, ExecuteScorer) and run.warnings == []
        assert run.agent_llm is not None and run.agent_llm.ledger is run.ledger
        assert run.scorer.config.settings.max_tokens == 50 and run.scorer.config.settings.seed == 3
        assert (run.config.agent_model_id, run.config.sampler, run.config.rm_sha256) == (f"small@{fake.url}", "trl", "")
        assert len(run.config.policy_sha256) == 64 and run.config.group_size == settings.group_size
    assert (tmp_path / "run" / "run.json").is_file()


def test_agents_that_cannot_answer_stop_the_run_before_any_training(tmp_path, policy_dir):
    make_task(tmp_path)
    settings = GRPORunConfig(task=f"jsonl:{tmp_path / 'qs.jsonl'}", policy=str(policy_dir), reward="execute")
    agents = AgentOptions(
        backend="openai", model="small", base_url=f"http://127.0.0.1:{free_port()}/v1", api_key_env="HOME"
    )
    with pytest.raises(BackendUnreachable, match="agent model at"):
        setup_run(settings, tmp_path / "run", sampler="trl", agents=agents)


@pytest.mark.parametrize(
    ("reward", "rm", "message"),
    [
        ("rm", None, "--rm DIR"),
        ("execute", Path("rm"), "--rm is for --reward rm"),
        ("valid", Path("rm"), "--reward valid reads no reward model"),
        ("custom", None, "custom reward"),
        ("router", None, "custom reward"),  # needs training traces: the bench builds it
    ],
)
def test_a_reward_that_does_not_fit_its_options_is_refused_before_anything_loads(tmp_path, reward, rm, message):
    settings = GRPORunConfig(task="no-such-task", policy="no-such-policy", reward=reward)
    with pytest.raises(ConfigError, match=message):
        setup_run(settings, tmp_path / "run", rm=rm)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("device", ["auto", "cpu"])
def test_the_reward_model_loads_where_device_says(tmp_path, monkeypatch, device):
    from orchrm.rm.model import RewardModel

    asked = []

    def load(folder, **kw):
        asked.append(kw.get("device"))
        raise ConfigError("stopped once the reward model was asked for")

    monkeypatch.setattr(RewardModel, "load", load)
    make_task(tmp_path)
    settings = GRPORunConfig(task=f"jsonl:{tmp_path / 'qs.jsonl'}", policy="no-such-policy", reward="rm")
    with pytest.raises(ConfigError, match="stopped"):
        setup_run(settings, tmp_path / "run", rm=tmp_path / "rm", rm_device=device)
    assert asked == [device]
