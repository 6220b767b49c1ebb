"""Real training of the embedded MiniLM reward model on a small synthetic, learnable preference."""

import json

import pytest

from orchrm.errors import ChecksumMismatch, ModelError
from orchrm.pairs import PairRow, render_plan, render_question
from orchrm.rm import RewardModel, RMConfig, pairwise_accuracy, train_reward_model


def _plan(kind, i):
    agents = {
        "good": [
            {"id": "solve", "type": "self_consistency", "input": f"Solve part {i} carefully", "options": {"samples": 5}},
            {"id": "check", "type": "reflexion", "input": "Check ${solve}"},
        ],
        "bad": [
            {"id": "guess", "type": "cot", "input": f"Guess quickly {i}"},
            {"id": "echo", "type": "cot", "input": "Repeat ${guess}"},
        ],
    }[kind]
    return json.dumps({"agents": agents, "edges": [{"from": agents[0]["id"], "to": agents[1]["id"]}]})


def make_rows(n, offset=0):
    return [
        PairRow(
            prompt=render_question(f"What is {i} + {i * 3}?"),
            chosen=render_plan(_plan("good", i)),
            rejected=render_plan(_plan("bad", i)),
            source="correct-over-incorrect" if i % 2 else "artifact",
            question_id=f"q{i}",
            task="synthetic",
        )
        for i in range(offset, offset + n)
    ]


@pytest.fixture(scope="module")
def trained():
    return train_reward_model(
        make_rows(32),
        make_rows(8, offset=100),
        RMConfig(epochs=3, batch_size=8, learning_rate=1e-4, max_length=96),
        progress=False,
    )


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


def test_save_load_score_and_refusals(trained, tmp_path):
    folder = trained.model.save(tmp_path / "rm")
    card = json.loads((folder / "orchrm.json").read_text())
    assert card["backbone"] == "all-minilm-l6-v2" and card["tasks"] == ["synthetic"]
    loaded = RewardModel.load(folder)
    question = "What is 5 + 15?"
    scores = loaded.score(question, [_plan("good", 5), _plan("bad", 5), "not json"])
    assert len(scores) == 3 and scores[0] > scores[1]
    assert scores == pytest.approx(trained.model.score(question, [_plan("good", 5), _plan("bad", 5), "not json"]), abs=1e-5)
    assert loaded.score(question, [_plan("good", 5)], batch_size=1) == pytest.approx(scores[:1], abs=1e-5)

    with pytest.raises(ModelError, match="backbone"):
        RewardModel.load(folder, expect_backbone="some-other-encoder")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(ChecksumMismatch, match="refusing to load"):
        RewardModel.load(folder)
    with pytest.raises(ModelError, match="not an orchrm reward model"):
        RewardModel.load(tmp_path)
