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


def test_pairs_in_an_older_rendering_are_refused_before_any_model_loads(tmp_path):
    """A card records this orchrm's rendering; rows rendered in another would score in a text they never trained on."""
    from orchrm.pairs import PairFileError, PairStats, write_pairs_dir
    from orchrm.rm import train_from_folder

    folder = tmp_path / "pairs"
    write_pairs_dir(folder, make_rows(4), make_rows(2, offset=50), PairStats())
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["render_version"] == 2
    del manifest["render_version"]  # as written before rendering v2
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(PairFileError, match="holds plans in rendering v1; this orchrm trains on v2") as err:
        train_from_folder(folder, tmp_path / "rm", RMConfig(epochs=1, device="cuda"))  # refused before cuda is asked
    assert "rebuild it with `orchrm pairs`" in str(err.value)
    assert not (tmp_path / "rm").exists()
