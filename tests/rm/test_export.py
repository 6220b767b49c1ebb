"""An exported reward model scores through plain transformers as orchrm scores it (the MiniLM encoder and a LoRA
decoder); the verified load ignores the files a hub adds and still refuses a changed one; files are 0644."""

import json
import os
import shutil
import stat

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from orchrm.errors import ChecksumMismatch, ConfigError
from orchrm.pairs.render import render_plan, render_question
from orchrm.rm import RewardModel, RMConfig
from orchrm.rm.export import TEMPLATE_FILE, export_reward_model, plain_score
from orchrm.rm.model import ModelCard
from synthetic_pairs import plan_json, question
from tiny_policy import tiny_policy


def _items(n: int) -> list[tuple[str, str]]:
    """n (question, plan) items: good and bad plans, raw text, and plans long enough to be truncated."""
    items = []
    for i in range(n):
        kind = ("good", "bad", "raw", "long")[i % 4]
        if kind == "raw":
            plan = f"I would just answer {i}  directly."
        elif kind == "long":
            plan = json.dumps(
                {
                    "agents": [{"id": f"a{j}", "type": "cot", "input": f"think {i} " * 40} for j in range(6)],
                    "edges": [{"from": f"a{j}", "to": f"a{j + 1}"} for j in range(5)],
                }
            )
        else:
            plan = plan_json(kind, i)
        items.append((question(i), plan))
    return items


def _plain(folder, items, decoder):
    """Scores the way any transformers user runs the exported folder (README.md's three lines)."""
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    suffix = "\n" if decoder else ""
    return plain_score(model, tok, [(render_question(q) + suffix, render_plan(p)) for q, p in items]), tok, model


@pytest.fixture(scope="module")
def encoder_rm(rm_dir):
    return RewardModel.load(rm_dir)


@pytest.fixture(scope="module")
def exported(encoder_rm, tmp_path_factory):
    return export_reward_model(encoder_rm, tmp_path_factory.mktemp("export") / "rm-hf")


@pytest.fixture(scope="module")
def decoder_rm(tmp_path_factory):
    """A tiny random Qwen2 with a LoRA adapter (its matrices made non-zero) and a value head, saved as `orchrm
    train-rm` saves a decoder and loaded back through the verified base."""
    from peft import get_peft_model

    from orchrm.rm.backbone import resolve_backbone
    from orchrm.rm.decoder import base_classifier, lora_config

    base = resolve_backbone(str(tiny_policy(tmp_path_factory.mktemp("base") / "tiny")))
    tok = AutoTokenizer.from_pretrained(base.path)
    torch.manual_seed(1)
    net = get_peft_model(base_classifier(base.path, tok), lora_config(4))
    with torch.no_grad():
        for name, p in net.named_parameters():
            if "lora_B" in name or "score" in name:
                p.normal_(0, 0.5)
    card = ModelCard(
        backbone=base.name,
        backbone_sha256=base.sha256,
        backbone_kind="decoder",
        model_type="qwen2",
        max_length=64,
        training_data_sha256="0" * 64,
        config=RMConfig(backbone=base.name),
    )
    folder = RewardModel(net, tok, card).save(tmp_path_factory.mktemp("rm") / "decoder")
    return RewardModel.load(folder)


def test_the_exported_encoder_scores_as_orchrm_does(encoder_rm, exported):
    items = _items(120)
    ours = encoder_rm.score_items(items)
    theirs, tok, model = _plain(exported, items, decoder=False)
    delta = max(abs(a - b) for a, b in zip(theirs, ours, strict=True))
    print(f"encoder: max |score - RewardModel.score| = {delta:.3g} over {len(items)} plans")
    assert delta <= 1e-5 and len(set(ours)) > 10
    assert type(model).__name__ == "BertForSequenceClassification" and "token_type_ids" not in tok("a", "b")
    # a stack that passes segment ids itself (text-embeddings-inference, vLLM) scores the same
    text, pair = render_question(items[0][0]), render_plan(items[0][1])
    enc = tok(text, pair, truncation=True, return_tensors="pt")
    first = enc["input_ids"][0].tolist().index(tok.sep_token_id)
    segments = torch.zeros_like(enc["input_ids"])
    segments[0, first + 1 :] = 1
    with torch.no_grad():
        assert float(model(**enc, token_type_ids=segments).logits[0, 0]) == pytest.approx(ours[0], abs=1e-5)
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(str(exported / "tokenizer.json")).encode(text, pair)
    assert raw.ids == enc["input_ids"][0].tolist() and set(raw.type_ids) == {0}


def test_batched_plain_scoring_matches_too(encoder_rm, exported):
    items = _items(24)
    tok, model = AutoTokenizer.from_pretrained(exported), AutoModelForSequenceClassification.from_pretrained(exported)
    batch = tok(
        [render_question(q) for q, _ in items],
        [render_plan(p) for _, p in items],
        truncation=True,
        padding=True,
        return_tensors="pt",
    )
    with torch.no_grad():
        theirs = model(**batch).logits[:, 0].tolist()
    assert theirs == pytest.approx(encoder_rm.score_items(items), abs=1e-5)


def test_the_exported_decoder_scores_as_orchrm_does(decoder_rm, tmp_path):
    out = export_reward_model(decoder_rm, tmp_path / "dec-hf")
    items = _items(120)
    ours = decoder_rm.score_items(items)
    theirs, tok, model = _plain(out, items, decoder=True)
    delta = max(abs(a - b) for a, b in zip(theirs, ours, strict=True))
    print(f"decoder: max |score - RewardModel.score| = {delta:.3g} over {len(items)} plans")
    assert delta <= 1e-4 and len(set(ours)) > 10  # issue 48: |d| <= 1e-4 for every stack the README names
    assert type(model).__name__ == "Qwen2ForSequenceClassification" and model.config.pad_token_id == tok.pad_token_id
    assert tok("question: q\n", "plan: " + "x" * 500, truncation=True)["input_ids"][-1] == tok.eos_token_id
    assert type(decoder_rm.model).__name__ == "PeftModelForSequenceClassification"  # the source is left alone
    template = json.loads((out / TEMPLATE_FILE).read_text())
    assert template["kind"] == "decoder" and template["text"] == "question: {question}\n"
    assert template["check"]["max_abs_diff"] <= 1e-3
    assert "<|im_end|>" in template["pooling"] and "scores differently" not in template["pooling"]  # pad is not eos


def test_the_folder_documents_its_input_and_holds_no_orchrm_card(exported, encoder_rm):
    template = json.loads((exported / TEMPLATE_FILE).read_text())
    assert (template["text"], template["text_pair"]) == ("question: {question}", "{plan}")
    assert template["tokenize"]["max_length"] == encoder_rm.card.max_length
    example = template["examples"][0]
    theirs, _, _ = _plain(exported, [(example["question"], example["plan"])], decoder=False)
    assert example["text"] == render_question(example["question"]) and theirs[0] == pytest.approx(example["score"])
    readme = (exported / "README.md").read_text()
    assert "AutoTokenizer.from_pretrained(DIR)" in readme and ".logits[0, 0]" in readme
    assert not (exported / "orchrm.json").exists()
    config = json.loads((exported / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"] and len(config["id2label"]) == 1


def test_export_refuses_an_existing_folder_unless_replace(encoder_rm, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.bin").write_bytes(b"old")
    with pytest.raises(ConfigError, match="already exists; refusing to export into it") as err:
        export_reward_model(encoder_rm, out)
    assert "--replace" in str(err.value) and "\n" not in str(err.value)
    assert (out / "stale.bin").read_bytes() == b"old"
    export_reward_model(encoder_rm, out, replace=True)
    assert not (out / "stale.bin").exists() and (out / "model.safetensors").is_file()  # replaced whole
    with pytest.raises(ConfigError, match="reward model's folder"):
        export_reward_model(encoder_rm, encoder_rm.path, replace=True)
    with pytest.raises(ConfigError, match="not an export"):
        export_reward_model(encoder_rm, shutil.copytree(encoder_rm.path, tmp_path / "other-rm"), replace=True)


def test_files_are_written_with_the_folders_normal_mode(encoder_rm, decoder_rm, tmp_path):
    old = os.umask(0o022)
    try:
        saved = RewardModel(encoder_rm.model, encoder_rm.tokenizer, encoder_rm.card).save(tmp_path / "rm")
        adapter = RewardModel(decoder_rm.model, decoder_rm.tokenizer, decoder_rm.card).save(tmp_path / "dec")
        out = export_reward_model(encoder_rm, tmp_path / "hf")
    finally:
        os.umask(old)
    assert stat.S_IMODE(saved.stat().st_mode) == 0o755
    for folder in (saved, adapter, out):
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}
        assert set(modes.values()) == {0o644}, modes
        assert {"model.safetensors", "adapter_model.safetensors"} & set(modes)


@pytest.fixture
def folder(rm_dir, tmp_path):
    return shutil.copytree(rm_dir, tmp_path / "rm")


def test_files_a_hub_adds_are_ignored(folder):
    (folder / "README.md").write_text("# my reward model\n")
    (folder / ".gitattributes").write_text("*.safetensors filter=lfs\n")
    (folder / ".cache" / "huggingface" / "download").mkdir(parents=True)
    (folder / ".cache" / "huggingface" / ".gitignore").write_text("*\n")
    (folder / ".cache" / "huggingface" / "download" / "model.safetensors.metadata").write_text("abc\n")
    (folder / ".cache" / "huggingface" / "x").write_text("x")
    assert RewardModel.load(folder).score(question(1), [plan_json("good", 1)])
    (folder / "added_tokens.json").write_text('{"good": 0}')  # read by the tokenizer: still refused
    with pytest.raises(ChecksumMismatch, match="added_tokens.json is not covered by its card"):
        RewardModel.load(folder)


def test_one_changed_hashed_file_is_refused_in_one_line(folder):
    (folder / "README.md").write_text("# hub card\n")
    config = folder / "config.json"
    config.write_text(config.read_text().replace('"num_attention_heads"', '"num_attention_heads" ', 1))
    with pytest.raises(ChecksumMismatch, match="config.json has sha256 .* refusing to load it") as err:
        RewardModel.load(folder)
    assert "\n" not in str(err.value)


def test_the_truncation_is_stored_where_a_stack_reads_it(encoder_rm, exported):
    """The card's max_length is in tokenizer_config.json (`model_max_length`, what `truncation=True` cuts to) and in
    tokenizer.json (what the `tokenizers` library applies by itself); a plan past it scores as orchrm scores it only
    cut there."""
    limit = encoder_rm.card.max_length
    config = json.loads((exported / "tokenizer_config.json").read_text())
    assert config["model_max_length"] == limit and "max_length" not in config
    truncation = json.loads((exported / "tokenizer.json").read_text())["truncation"]
    assert (truncation["max_length"], truncation["strategy"]) == (limit, "LongestFirst")

    question, plan = (
        "What is 2 + 2?",
        json.dumps({"agents": [{"id": f"a{i}", "type": "cot", "input": f"part {i} " * 30} for i in range(6)]}),
    )
    text, pair = render_question(question), render_plan(plan)
    tok, model = AutoTokenizer.from_pretrained(exported), AutoModelForSequenceClassification.from_pretrained(exported)
    full = tok(text, pair, truncation=False, return_tensors="pt")
    cut = tok(text, pair, truncation=True, return_tensors="pt")
    assert limit < full["input_ids"].shape[1] <= model.config.max_position_embeddings  # the cut matters here
    assert cut["input_ids"].shape[1] == limit
    ours = encoder_rm.score(question, [plan])[0]
    with torch.no_grad():
        assert float(model(**cut).logits[0, 0]) == pytest.approx(ours, abs=1e-4)
        assert abs(float(model(**full).logits[0, 0]) - ours) > 1e-4  # a stack that drops the cut scores otherwise
