"""A trained orchestrator served by llama-server: which folder an adapter path names, the checks before it
is served (files against the card or seal, the base it was trained on), the cached conversion, and a real
server giving the adapted orchestrator and its base-model sub-agents different models from one process."""

import asyncio
import json
import shutil

import pytest
import torch

from orchrm.errors import ChecksumMismatch, ConfigError
from orchrm.grpo import GRPORunConfig, policy_weights
from orchrm.grpo import adapter as adapter_mod
from orchrm.grpo.adapter import adapter_folder, save_adapter, served_adapter
from orchrm.grpo.checkpoints import seal
from orchrm.llm import LocalBackend
from orchrm.llm.server import ServerConfig
from orchrm.llm.types import GenerateConfig, Message
from tiny_policy import write_gguf


@pytest.fixture
def tiny(policy_dir, tmp_path, monkeypatch):
    """The tiny policy as a GGUF, its converted weights and the adapter cache kept under tmp_path."""
    monkeypatch.setattr("orchrm.llm.weights.cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr("orchrm.grpo.adapter.cache_dir", lambda: tmp_path / "cache")
    return policy_weights(str(write_gguf(policy_dir, tmp_path / "tiny.gguf")))


def trained_run(weights, run, steps=3):
    """A run folder as train-orchestrator leaves it: run.json, a sealed checkpoint, the final adapter; the
    adapter's B matrices random so that it moves the distribution."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(weights.path),
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.5)
    config = GRPORunConfig(task="jsonl", policy=str(weights.gguf), policy_sha256=weights.sha256, max_steps=steps)
    run.mkdir()
    (run / "run.json").write_text(config.model_dump_json())
    ckpt = run / "checkpoints" / f"checkpoint-{steps}"
    model.save_pretrained(ckpt)
    seal(ckpt, steps, {})
    save_adapter(model, AutoTokenizer.from_pretrained(weights.path), run / "adapter", weights, config, steps)
    return run


def test_an_adapter_path_names_the_final_adapter_else_the_last_sealed_checkpoint(tiny, tmp_path):
    run = trained_run(tiny, tmp_path / "run")
    assert adapter_folder(run) == run / "adapter"
    assert adapter_folder(run / "checkpoints" / "checkpoint-3") == run / "checkpoints" / "checkpoint-3"
    shutil.rmtree(run / "adapter")
    assert adapter_folder(run) == run / "checkpoints" / "checkpoint-3"
    with pytest.raises(ConfigError, match="no trained orchestrator adapter"):
        adapter_folder(tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        adapter_folder(tmp_path / "nowhere")


def test_served_adapters_are_labelled_converted_once_and_cached(tiny, tmp_path, monkeypatch):
    run = trained_run(tiny, tmp_path / "run")
    first = served_adapter(run, str(tiny.gguf))
    assert first.name == "run:step-3" and first.path.is_file()
    monkeypatch.setattr(adapter_mod, "convert_lora", lambda *a: pytest.fail("converted again"))
    assert served_adapter(run, str(tiny.gguf)) == first
    from_checkpoint = served_adapter(run / "checkpoints" / "checkpoint-3", str(tiny.gguf))
    assert from_checkpoint.name == "run:step-3" and from_checkpoint.sha256 == first.sha256  # the same peft files


def test_a_changed_cached_conversion_is_made_again(tiny, tmp_path):
    run = trained_run(tiny, tmp_path / "run")
    first = served_adapter(run, str(tiny.gguf))
    first.path.write_bytes(b"GGUF tampered")
    again = served_adapter(run, str(tiny.gguf))
    assert again.sha256 == first.sha256 and again.path.read_bytes()[:4] == b"GGUF" and again.path.stat().st_size > 100


@pytest.mark.parametrize("where", ["adapter", "checkpoints/checkpoint-3"])
def test_a_changed_adapter_file_is_refused(tiny, tmp_path, where):
    run = trained_run(tiny, tmp_path / "run")
    weights = run / where / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(ChecksumMismatch, match="adapter_model.safetensors"):
        served_adapter(run / where, str(tiny.gguf))


def test_an_adapter_trained_on_another_model_is_refused(tiny, tmp_path, policy_dir):
    run = trained_run(tiny, tmp_path / "run")
    other = tmp_path / "other.gguf"
    other.write_bytes(tiny.gguf.read_bytes() + b"\0")  # another file: another sha256
    with pytest.raises(ConfigError, match="was trained on gguf:"):
        served_adapter(run, str(other))


def test_an_unreadable_card_is_one_line(tiny, tmp_path):
    run = trained_run(tiny, tmp_path / "run")
    card = run / "adapter" / "orchrm-adapter.json"
    card.write_text(json.dumps({"files": "nope"}))
    with pytest.raises(ConfigError, match="unreadable adapter card"):
        served_adapter(run, str(tiny.gguf))


@pytest.mark.real_model
def test_one_server_serves_the_adapted_orchestrator_and_the_base_model(tiny, tmp_path):
    adapter = served_adapter(trained_run(tiny, tmp_path / "run"), str(tiny.gguf))
    server = ServerConfig(parallel=2, ctx_per_slot=512)
    adapted = LocalBackend(str(tiny.gguf), server=server, adapter=adapter)
    base_view, plain = adapted.base_view(), LocalBackend(str(tiny.gguf), server=server)
    messages, cfg = [Message(role="user", content="plan this")], GenerateConfig(temperature=0.0, max_tokens=12)

    async def go():
        try:
            texts = [(await b.complete(messages, cfg, seed=1)).text for b in (adapted, base_view, plain, adapted)]
            return texts, adapted.server.pid, base_view.server.pid
        finally:
            for b in (base_view, adapted, plain):
                await b.aclose()

    (on, off, bare, on_again), pid, view_pid = asyncio.run(go())
    assert pid == view_pid  # one process
    assert off == bare and on == on_again and on != bare  # scale 0 is the base model; the adapter's scale comes back
    assert adapted.model_id == f"{plain.model_id}+lora:{adapter.sha256}" and base_view.model_id == plain.model_id


@pytest.mark.real_model
def test_rollout_with_an_adapter_labels_its_traces_with_the_checkpoint(tiny, tmp_path):
    from typer.testing import CliRunner

    from mas_fakes import make_task
    from orchrm.cli.app import app
    from orchrm.mas.traces import read_traces

    make_task(tmp_path)
    run = trained_run(tiny, tmp_path / "grpo")
    args = [
        *["rollout", "--task", f"jsonl:{tmp_path / 'qs.jsonl'}", "--model", str(tiny.gguf)],
        *"--n-questions 2 --n-plans 1 --plan-max-tokens 16 --agent-max-tokens 8 --no-cache --quiet --json".split(),
    ]
    adapted = CliRunner().invoke(app, [*args, "--orchestrator-adapter", str(run), "--out", str(tmp_path / "spec")])
    base = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "base")])
    assert adapted.exit_code == 0 and base.exit_code == 0, adapted.output + base.output
    spec_traces, base_traces = (
        read_traces(tmp_path / "spec" / "traces.jsonl"),
        read_traces(tmp_path / "base" / "traces.jsonl"),
    )
    assert {t.orchestrator.checkpoint for t in spec_traces} == {"grpo:step-3"}
    assert {t.orchestrator.checkpoint for t in base_traces} == {"base"}
    assert all(
        t.orchestrator.model_id.endswith("+lora:" + served_adapter(run, str(tiny.gguf)).sha256) for t in spec_traces
    )
    assert json.loads(adapted.stdout.strip().splitlines()[-1])["traces"] == 2
