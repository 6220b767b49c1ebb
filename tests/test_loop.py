"""The whole loop with a scripted LLM: rollouts -> pairs -> RM -> best-of-N -> report, then a cached rerun."""

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from mas_fakes import bon_replies as replies
from mas_fakes import make_task, scripted_llm
from orchrm.bon.config import BonConfig
from orchrm.errors import ChecksumMismatch
from orchrm.loop import LoopConfig, arun_loop
from orchrm.mas.run_config import RolloutSettings, RunConfig
from orchrm.mas.run_folder import rollout_differences
from orchrm.profiles import overrides, profiled
from orchrm.rm.config import RMConfig


def test_loop_end_to_end_then_rerun_reuses_everything(tmp_path):
    task = make_task(tmp_path)
    config = LoopConfig(
        task="jsonl",
        train_questions=6,
        test_questions=3,
        n_plans=3,
        constrained=False,
        rm=RMConfig(epochs=1, max_length=96),
        bon=BonConfig(resamples=200),
    )
    assert config.run_config("train", "m").n_plans == config.run_config("test", "m").n_plans == 3  # one N for both
    result = asyncio.run(arun_loop(task, scripted_llm(replies()), tmp_path / "demo", config))
    assert result.rm_trained and result.pair_stats.total > 0
    assert result.bon.results.questions == 3
    assert result.reports["md"].exists() and result.reports["html"].exists()
    assert not result.bon.warnings  # the RM was trained on this task
    assert (
        result.bon.results.prior and result.bon.results.prior["trials"] > 0
    )  # the loop fits the prior on its own training traces

    llm = scripted_llm(replies())
    again = asyncio.run(arun_loop(task, llm, tmp_path / "demo", config))
    assert not again.rm_trained  # same pairs, same settings: the saved RM is reused
    assert llm.backend.calls == []  # every trace and judgment was on disk
    for method, m in again.bon.results.methods.items():  # wall time includes the live RM scoring
        assert (m.accuracy, m.tokens) == (
            result.bon.results.methods[method].accuracy,
            result.bon.results.methods[method].tokens,
        )

    # A tampered RM is refused, never retrained over: the evidence stays for the user to look at.
    tokenizer = tmp_path / "demo" / "rm" / "tokenizer.json"
    tok = json.loads(tokenizer.read_text())
    vocab = tok["model"]["vocab"]
    vocab["good"], vocab["bad"] = vocab["bad"], vocab["good"]
    tokenizer.write_text(json.dumps(tok))
    with pytest.raises(ChecksumMismatch, match="tokenizer.json"):
        asyncio.run(arun_loop(task, scripted_llm(replies()), tmp_path / "demo", config))
    assert json.loads(tokenizer.read_text()) == tok
    assert {p.name for p in (tmp_path / "demo").iterdir()} >= {"pairs", "rm"}
    assert not [p for p in (tmp_path / "demo").iterdir() if p.name.startswith(".")]  # no temp folders left


def test_loop_on_two_models_records_both_down_to_the_rm_card(tmp_path):
    from orchrm.llm import LLM
    from orchrm.llm.scripted import ScriptedBackend
    from orchrm.rm.model import RewardModel

    task = make_task(tmp_path)
    config = LoopConfig(
        task="jsonl",
        train_questions=4,
        test_questions=2,
        n_plans=3,
        constrained=False,
        rm=RMConfig(epochs=1, max_length=96),
        bon=BonConfig(resamples=100, judge=False),
    )
    big = LLM(ScriptedBackend([replies()], name="big"))
    small = LLM(ScriptedBackend([replies()], name="small"), ledger=big.ledger)
    result = asyncio.run(arun_loop(task, big, tmp_path / "demo", config, agent_llm=small))
    assert not any("orchestrator" in m[0].content for m, _, _ in small.backend.calls)
    assert all("orchestrator" in m[0].content for m, _, _ in big.backend.calls)
    card = RewardModel.load(tmp_path / "demo" / "rm").card
    assert (card.orchestrator_models, card.agent_models) == (["big"], ["small"])
    assert (result.bon.results.model, result.bon.results.agent_model) == ("big", "small")
    assert result.pair_stats.agent_models == {"small": sum(result.pair_stats.agent_models.values())}


def committed_loop_files():
    root = Path(__file__).resolve().parents[1]
    files = subprocess.run(
        ["git", "ls-files", "*loop.json"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    # Only files written before `n_plans` (the old flat layout) are what this test reads back; newer ones are models.
    return [root / f for f in files if "n_plans" not in (root / f).read_text()]


@pytest.mark.parametrize("path", committed_loop_files(), ids=lambda p: p.parent.name)
def test_every_committed_loop_json_loads_with_each_setting_where_it_was(path):
    """A loop.json written before the rollout settings were nested keeps every value: the rollout's settings
    lifted into `rollout`, the rest where they were, and the run folders it made resume as the same runs."""
    data = json.loads(path.read_text())
    config = LoopConfig.model_validate(data)
    flat = {k: v for k, v in data.items() if k in RolloutSettings.model_fields}
    assert {k: getattr(config.rollout, k) for k in flat} == flat
    assert {k: getattr(config, k) for k in ("task", "train_questions", "test_questions")} == {
        k: data[k] for k in ("task", "train_questions", "test_questions")
    }
    assert config.n_plans == data["n"] == data["bon"]["n"]  # the old file's two copies: one field now
    assert config.rm.model_dump() == {**config.rm.model_dump(), **data["rm"]}
    assert LoopConfig.model_validate_json(config.model_dump_json()) == config  # written nested, read back the same
    for split in ("train", "test"):
        run_json = path.parent / ("train" if split == "train" else "bon/heldout") / "run.json"
        if run_json.exists():  # the run folder it made: the same settings, so a resume is not refused
            made = RunConfig.model_validate_json(run_json.read_text())
            ours = config.run_config(split, made.model_id, made.agent_backend, made.agent_model_id)
            assert rollout_differences(ours.model_copy(update={"version": made.version}), made) == []  # version: kept


def test_old_flat_settings_and_a_partial_rollout_fill_in_from_the_shared_defaults():
    flat = LoopConfig(temperature=0.5, seed=3)
    nested = LoopConfig(rollout={"temperature": 0.5, "seed": 3})
    assert flat == nested and flat.seed == 3 and flat.rollout.constrained is RolloutSettings().constrained is False
    demo = profiled(LoopConfig, "demo")
    assert (
        demo.run_config("test", "m").model_dump()
        == RunConfig(
            task=LoopConfig().task,
            split="test",
            n_questions=16,
            n_plans=4,
            model_id="m",
            profile="demo",
            **overrides("demo", RolloutSettings.model_fields),
        ).model_dump()
    )


def test_an_old_loop_json_with_its_n_twice_reads_as_one_n_plans():
    old = {"task": "jsonl", "n": 8, "temperature": 0.9, "bon": {"n": 8, "judge": False}}
    config = LoopConfig.model_validate(old)
    assert (config.n_plans, config.rollout.temperature, config.bon.judge, config.profile) == (8, 0.9, False, "base")
    assert "n" not in config.bon.model_dump()


def test_a_rerun_with_other_settings_is_refused_before_anything_is_touched(tmp_path):
    """`loop.json` is checked as a rollout's `run.json` is: a setting the rerun cannot honour is one line naming
    it; more questions or plans, another RM or other best-of-N settings are a rerun of the same loop."""
    from orchrm.errors import ConfigError
    from orchrm.loop import LOOP_FILE, loop_differences, read_loop_config

    made = profiled(LoopConfig, "demo", task="jsonl", train_questions=4, test_questions=2, n_plans=3)
    out = tmp_path / "demo"
    out.mkdir()
    (out / LOOP_FILE).write_text(made.model_dump_json(indent=2))
    assert read_loop_config(out) == made

    other = made.model_copy(update={"rollout": made.rollout.model_copy(update={"temperature": 0.5})})
    with pytest.raises(ConfigError, match=r"holds a loop made with other settings \(rollout.temperature: 0.9 -> 0.5\)"):
        asyncio.run(arun_loop(make_task(tmp_path), scripted_llm(replies()), out, other))
    assert [p.name for p in out.iterdir()] == [LOOP_FILE] and read_loop_config(out) == made

    grown = LoopConfig(
        task="jsonl",
        train_questions=8,
        test_questions=5,
        n_plans=4,
        parallel_questions=1,
        rm=RMConfig(epochs=2),
        bon=BonConfig(judge=False),
        rollout=made.rollout,
    )
    assert loop_differences(grown, made) == []
    assert loop_differences(LoopConfig(task="other"), LoopConfig()) == [f"task: {LoopConfig().task!r} -> 'other'"]


def test_the_held_out_rollout_and_judge_run_beside_the_training_rollout(tmp_path):
    task = make_task(tmp_path)
    config = LoopConfig(
        task="jsonl",
        train_questions=4,
        test_questions=2,
        n_plans=2,
        parallel_questions=1,
        constrained=False,
        rm=RMConfig(epochs=1, max_length=96),
        bon=BonConfig(resamples=200),
    )
    events = []

    def seen(e):
        held = e.bon.rollout.plans_done if e.bon is not None and e.bon.rollout is not None else 0
        train = e.rollout.plans_done if e.rollout is not None else None
        events.append((e.stage, held, train))

    llm = scripted_llm(replies(), delay_s=0.05)  # requests take a while, as on a server
    result = asyncio.run(arun_loop(task, llm, tmp_path / "demo", config, on_event=seen))
    pairs_at = [s for s, _, _ in events].index("pairs")  # the training rollout is over here
    assert any(stage == "bon" and held > 0 for stage, held, _ in events[:pairs_at])  # held-out plans ran before
    assert result.bon.results.questions == 2 and "judge" in result.bon.results.methods
