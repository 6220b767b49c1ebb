"""A decoder LLM as the reward model's backbone: LoRA + a value head over verified base weights, trained
through TRL's RewardTrainer on a tiny random Qwen2 (support/tiny_policy.py), saved, loaded, scored, refused
when tampered with."""

import hashlib
import json
import shutil

import pytest
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from orchrm.cli.app import app
from orchrm.errors import ChecksumMismatch, ConfigError, ModelError
from orchrm.pairs import PairStats
from orchrm.pairs.rows import write_pairs_dir
from orchrm.rm import RewardModel, RMConfig, pairwise_accuracy, train_reward_model
from orchrm.rm.backbone import DEFAULT_BACKBONE, backbone_kind
from orchrm.rm.config import DECODER_DEFAULTS
from orchrm.rm.encoding import encode
from synthetic_pairs import make_rows, plan_json
from tiny_policy import tiny_policy, tiny_tokenizer

QUESTION = "What is 5 + 15?"
PLANS = [plan_json("good", 5), plan_json("bad", 5), "not json"]


@pytest.fixture(scope="module", autouse=True)
def _threads_restored():
    """`RMConfig.threads` sets torch's threads for the process: give the next test module its own back."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return tiny_policy(tmp_path_factory.mktemp("base") / "tiny")


@pytest.fixture(scope="module")
def trained(base):
    # one thread: a tiny model gains nothing from more, and loses much to a busy machine's other processes
    config = RMConfig(backbone=str(base), epochs=3, learning_rate=1e-2, max_length=96, threads=1)
    return train_reward_model(make_rows(16), make_rows(8, offset=100), config, progress=False)


@pytest.fixture(scope="module")
def saved(trained, tmp_path_factory):
    return trained.model.save(tmp_path_factory.mktemp("rm") / "model")


@pytest.fixture
def folder(saved, tmp_path):
    return shutil.copytree(saved, tmp_path / "rm")


def test_decoders_are_recognised_and_take_their_own_defaults(base):
    assert backbone_kind(str(base)) == "decoder" and backbone_kind("qwen2.5-coder-0.5b") == "decoder"
    assert backbone_kind(DEFAULT_BACKBONE) == "encoder" and backbone_kind("no-such-model") == "encoder"
    config = RMConfig(backbone=str(base))
    assert {k: getattr(config, k) for k in DECODER_DEFAULTS} == DECODER_DEFAULTS
    assert RMConfig(backbone=str(base), epochs=1, lora_r=4).epochs == 1  # what is given explicitly stays
    assert RMConfig.model_validate(config.model_dump()) == config  # the card's copy reads back the same
    encoder = RMConfig()
    assert (encoder.epochs, encoder.batch_size, encoder.learning_rate, encoder.lora) == (4, 8, 5e-5, False)


def test_decoder_encoding_separates_question_and_plan_and_ends_in_eos():
    tok = tiny_tokenizer()
    ids = encode(tok, "question: q", "plan: p", 64, decoder=True)
    assert tok.decode(ids) == "question: q\nplan: p<|im_end|>"
    long = encode(tok, "question: q", "plan: " + "x" * 500, 64, decoder=True)
    assert len(long) == 64 and long[-1] == tok.eos_token_id  # truncated, never dropped


def test_training_learns_through_an_adapter_and_leaves_the_base_alone(trained, base):
    losses = [h.train_loss for h in trained.history if h.train_loss is not None]
    assert losses[-1] < losses[0] and losses[-1] < 0.69
    accuracy, per_source = pairwise_accuracy(trained.model, make_rows(8, offset=200))
    assert accuracy == 1.0 and set(per_source) == {"artifact", "correct-over-incorrect"}
    net = trained.model.model
    assert type(net).__name__ == "PeftModelForSequenceClassification"
    trainable = [n for n, p in net.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n or "score" in n for n in trainable)  # the base stays frozen
    state = net.base_model.model.state_dict()
    original = load_file(base / "model.safetensors")
    assert state["model.layers.0.self_attn.q_proj.base_layer.weight"].equal(
        original["model.layers.0.self_attn.q_proj.weight"]
    )
    assert any("lora_B" in k and v.abs().sum() > 0 for k, v in state.items())


def test_the_best_epochs_adapter_is_the_one_kept(base):
    val = make_rows(12, offset=100)
    for i in (0, 3, 4, 6, 8, 9):  # flipped pairs: held-out accuracy rises and falls between epochs
        val[i].chosen, val[i].rejected = val[i].rejected, val[i].chosen
    config = RMConfig(
        backbone=str(base), epochs=4, learning_rate=3e-2, max_length=96, early_stopping_patience=4, threads=1
    )
    result = train_reward_model(make_rows(16), val, config, progress=False)
    best = max(h.accuracy for h in result.history)
    assert pairwise_accuracy(result.model, val)[0] == result.model.card.metrics["val_accuracy"] == best


def test_the_folder_holds_the_adapter_head_tokenizer_and_card_only(saved, base):
    files = {p.name for p in saved.iterdir()}
    assert files == {
        "adapter_config.json",
        "adapter_model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
        "orchrm.json",
        "folder.json",
    }
    card = json.loads((saved / "orchrm.json").read_text())
    assert card["backbone_kind"] == "decoder" and card["backbone"] == str(base.resolve())
    assert card["backbone_sha256"] == hashlib.sha256((base / "model.safetensors").read_bytes()).hexdigest()
    assert set(card["files"]) == files - {"orchrm.json"} and card["config"]["lora"] is True
    adapter = json.loads((saved / "adapter_config.json").read_text())
    assert (adapter["task_type"], adapter["base_model_name_or_path"]) == ("SEQ_CLS", card["backbone"])
    assert any(k.endswith("score.weight") for k in load_file(saved / "adapter_model.safetensors"))


def test_load_rebuilds_base_and_adapter_and_scores_the_same(trained, saved):
    loaded = RewardModel.load(saved, expect_backbone=trained.model.card.backbone)
    scores = loaded.score(QUESTION, PLANS)
    assert scores == pytest.approx(trained.model.score(QUESTION, PLANS), abs=1e-5) and scores[0] > scores[1]
    assert loaded.score(QUESTION, PLANS[:1], batch_size=1) == pytest.approx(scores[:1], abs=1e-5)
    assert loaded.score_items([(QUESTION, p) for p in PLANS]) == pytest.approx(scores, abs=1e-5)
    assert loaded.card.weights_sha256 == loaded.card.files["adapter_model.safetensors"]


def test_a_changed_adapter_or_base_is_refused(folder, base, tmp_path):
    adapter = folder / "adapter_model.safetensors"
    original = adapter.read_bytes()
    adapter.write_bytes(original[:-8] + b"\0" * 8)
    with pytest.raises(ChecksumMismatch, match="adapter_model.safetensors has sha256"):
        RewardModel.load(folder)
    adapter.write_bytes(original)
    (folder / "adapter_model.bin").write_bytes(b"pickle")
    with pytest.raises(ChecksumMismatch, match="adapter_model.bin is not covered by its card"):
        RewardModel.load(folder)
    (folder / "adapter_model.bin").unlink()

    other = shutil.copytree(base, tmp_path / "base")
    weights = load_file(other / "model.safetensors")
    weights["model.norm.weight"] += 1
    save_file(weights, other / "model.safetensors", metadata={"format": "pt"})
    card = json.loads((folder / "orchrm.json").read_text())
    (folder / "orchrm.json").write_text(json.dumps({**card, "backbone": str(other)}))
    with pytest.raises(ChecksumMismatch, match="backbone .* has sha256 .* refusing to load it"):
        RewardModel.load(folder)
    shutil.rmtree(other)
    with pytest.raises(ModelError, match="backbone .* does not exist"):
        RewardModel.load(folder)


def test_an_adapter_without_its_value_head_is_refused(folder):
    adapter = folder / "adapter_model.safetensors"
    save_file({k: v for k, v in load_file(adapter).items() if "score" not in k}, adapter, metadata={"format": "pt"})
    card = json.loads((folder / "orchrm.json").read_text())
    digest = hashlib.sha256(adapter.read_bytes()).hexdigest()
    (folder / "orchrm.json").write_text(json.dumps({**card, "files": {**card["files"], adapter.name: digest}}))
    with pytest.raises(ModelError, match="holds no value head"):
        RewardModel.load(folder)


def test_a_decoder_trains_lora_or_nothing(base):
    with pytest.raises(ConfigError, match="decoder LLM"):
        train_reward_model(make_rows(4), [], RMConfig(backbone=str(base), lora=False), progress=False)


def test_train_rm_cli_takes_a_decoder_backbone(base, tmp_path):
    pairs = tmp_path / "pairs"
    write_pairs_dir(pairs, make_rows(8), make_rows(4, offset=50), PairStats())
    argv = [
        "train-rm",
        str(pairs),
        "--out",
        str(tmp_path / "rm"),
        "--backbone",
        str(base),
        "--epochs",
        "1",
        "--max-length",
        "64",
    ]
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "decoder backbone" in result.output
    card = RewardModel.load(tmp_path / "rm").card
    assert (card.backbone_kind, card.config.epochs, card.config.batch_size, card.max_length) == ("decoder", 1, 4, 64)
