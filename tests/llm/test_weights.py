"""GGUF -> transformers conversion: exact weights, the tokenizer kept, cached by sha256, verified on load."""

import json

import pytest
import torch

from orchrm.errors import ChecksumMismatch, ModelError
from orchrm.llm.weights import CARD_FILE, converted_dir, policy_weights, read_card
from tiny_policy import write_gguf


@pytest.fixture
def gguf_file(policy_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHRM_CACHE_DIR", str(tmp_path / "cache"))
    return write_gguf(policy_dir, tmp_path / "tiny.gguf")


def test_a_gguf_converts_to_the_same_trainable_model(policy_dir, gguf_file):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    weights = policy_weights(str(gguf_file))
    assert weights.path == converted_dir(weights.sha256, "float32") and weights.name == "tiny"
    names = sorted(p.name for p in weights.path.iterdir())
    assert "model.safetensors" in names and CARD_FILE in names and not any(n.endswith((".bin", ".pt")) for n in names)
    config = json.loads((weights.path / "config.json").read_text())
    assert "quantization_config" not in config  # a plain model: trainable and saveable
    converted = AutoModelForCausalLM.from_pretrained(weights.path)
    original = AutoModelForCausalLM.from_pretrained(policy_dir)
    ids = torch.tensor([[5, 17, 200, 33]])
    assert torch.equal(converted(ids).logits, original(ids).logits)
    assert all(p.requires_grad for p in converted.parameters())
    tok = AutoTokenizer.from_pretrained(weights.path)
    messages = [{"role": "user", "content": "Question: 2+2?\nPlan:"}]
    assert tok.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    ) == AutoTokenizer.from_pretrained(policy_dir).apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )


def test_the_conversion_is_cached_and_checked(gguf_file, monkeypatch):
    first = policy_weights(str(gguf_file))
    stamp = (first.path / "model.safetensors").stat().st_mtime_ns

    def boom(*a, **k):
        raise AssertionError("converted twice")

    monkeypatch.setattr("orchrm.llm.weights.convert_gguf", boom)
    assert policy_weights(str(gguf_file)).path == first.path
    assert (first.path / "model.safetensors").stat().st_mtime_ns == stamp
    weights = first.path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-4] + b"\0\0\0\1")
    with pytest.raises(ChecksumMismatch, match="model.safetensors does not match its card"):
        policy_weights(str(gguf_file))
    (first.path / "extra.txt").write_text("x")
    with pytest.raises(ChecksumMismatch):
        read_card(first.path)


def test_a_local_folder_is_used_as_it_is_and_pickles_are_refused(policy_dir, tmp_path):
    import shutil

    w = policy_weights(policy_dir)
    assert w.path == policy_dir.resolve() and len(w.sha256) == 64
    bad = shutil.copytree(policy_dir, tmp_path / "bad")
    (bad / "pytorch_model.bin").write_bytes(b"pickle")
    with pytest.raises(ModelError, match="pickled"):
        policy_weights(bad)


def test_a_conversion_that_wrote_no_weights_is_not_cached(gguf_file, monkeypatch):
    # transformers saves on rank 0 only once a process group has started: a later rank writes nothing.
    monkeypatch.setattr(
        "transformers.modeling_utils.PreTrainedModel.should_save_on_this_rank", lambda self, main: False
    )
    with pytest.raises(ModelError, match="wrote no weights converting tiny.gguf"):
        policy_weights(str(gguf_file))
    assert not any(p.is_dir() for p in (gguf_file.parent / "cache" / "policies").iterdir())  # nothing half-made cached
