"""Real training of the embedded MiniLM reward model on a small synthetic, learnable preference."""

import json
import shutil

import pytest

from orchrm.errors import ChecksumMismatch, ModelError
from orchrm.rm import RewardModel, RMConfig, pairwise_accuracy, train_reward_model
from synthetic_pairs import make_rows
from synthetic_pairs import plan_json as _plan


@pytest.fixture
def trained(trained_rm):
    return trained_rm


def test_training_learns_the_preference(trained):
    assert trained.history, "no epoch was evaluated"
    losses = [h.train_loss for h in trained.history if h.train_loss is not None]
    assert losses[-1] < 0.69  # below chance-level BT loss (ln 2)
    accuracy, per_source = pairwise_accuracy(trained.model, make_rows(8, offset=200))
    assert accuracy == 1.0 and set(per_source) == {"artifact", "correct-over-incorrect"}
    assert trained.model.card.metrics["val_accuracy"] == 1.0
    assert trained.pairs_per_second > 0


def test_without_validation_pairs_there_is_no_accuracy():
    result = train_reward_model(make_rows(8), [], RMConfig(epochs=1, max_length=64), progress=False)
    assert result.model.card.metrics["val_accuracy"] is None
    assert [h.accuracy for h in result.history] == [None]


def test_save_load_score_and_refusals(trained, rm_dir, tmp_path):
    folder = shutil.copytree(rm_dir, tmp_path / "rm")
    card = json.loads((folder / "orchrm.json").read_text())
    assert card["backbone"] == "all-minilm-l6-v2" and card["tasks"] == ["synthetic"]
    loaded = RewardModel.load(folder)
    question = "What is 5 + 15?"
    scores = loaded.score(question, [_plan("good", 5), _plan("bad", 5), "not json"])
    assert len(scores) == 3 and scores[0] > scores[1]
    assert scores == pytest.approx(
        trained.model.score(question, [_plan("good", 5), _plan("bad", 5), "not json"]), abs=1e-5
    )
    assert loaded.score(question, [_plan("good", 5)], batch_size=1) == pytest.approx(scores[:1], abs=1e-5)

    with pytest.raises(ModelError, match="backbone"):
        RewardModel.load(folder, expect_backbone="some-other-encoder")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
    with pytest.raises(ChecksumMismatch, match="config.json has sha256"):
        RewardModel.load(folder)
    (folder / "config.json").write_text(json.dumps(config))
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(ChecksumMismatch, match="refusing to load"):
        RewardModel.load(folder)
    with pytest.raises(ModelError, match="not an orchrm reward model"):
        RewardModel.load(tmp_path)


def test_card_records_the_models_that_made_the_training_data(tmp_path):
    from orchrm.rm.train import data_models

    stats = {"traces": 4, "orchestrator_models": {"big": 4}, "agent_models": {"small": 3, "big": 1}}
    assert data_models(stats) == {"orchestrator_models": ["big"], "agent_models": ["big", "small"]}
    assert data_models({}) == {"orchestrator_models": [], "agent_models": []} and data_models({"traces": "x"}) == {}
    result = train_reward_model(make_rows(8), [], RMConfig(epochs=1, max_length=64), pair_stats=stats, progress=False)
    loaded = RewardModel.load(result.model.save(tmp_path / "rm"))
    assert (loaded.card.orchestrator_models, loaded.card.agent_models) == (["big"], ["big", "small"])


def test_the_card_records_the_rendering_of_the_pairs_folder(tmp_path, monkeypatch):
    """train-rm trains on the rows as rendered: the manifest's rendering goes to the card (v1 where a folder was
    written before manifests recorded it)."""
    from orchrm.pairs import PairStats, write_pairs_dir
    from orchrm.rm import train as train_module

    seen = []
    monkeypatch.setattr(train_module, "train_reward_model", lambda *a, **kw: seen.append(kw["render_version"]) or 1 / 0)
    folder = tmp_path / "pairs"
    for version, drop in ((2, False), (1, True)):
        write_pairs_dir(folder, make_rows(4), make_rows(2, offset=50), PairStats(), render_version=version)
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["render_version"] == version
        if drop:
            del manifest["render_version"]  # as written before manifests recorded it
            (folder / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(ZeroDivisionError):
            train_module.train_from_folder(folder, tmp_path / "rm", RMConfig(epochs=1))
    assert seen == [2, 1]


def test_a_rendering_this_orchrm_cannot_write_is_refused_before_any_model_loads():
    from orchrm.errors import ConfigError

    with pytest.raises(ConfigError, match=r"render_version must be one of \(1, 2\), got 5"):
        train_reward_model(make_rows(2), [], RMConfig(epochs=1, device="cuda"), render_version=5)
