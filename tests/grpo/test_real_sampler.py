"""The server sampler against a real llama-server (the tiny policy as a GGUF, so it runs in seconds): the
converted adapter gives the server the trained policy's next-token distribution, and GRPO trains with it."""

import json

import httpx
import pytest
import torch
from test_grpo_train import config, count_b

from mas_fakes import make_task
from orchrm.grpo import open_run, policy_weights, train_orchestrator
from orchrm.grpo.sampler import LlamaServerEngine
from tiny_policy import write_gguf

pytestmark = pytest.mark.real_model


@pytest.fixture
def tiny_gguf(policy_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("orchrm.llm.weights.cache_dir", lambda: tmp_path / "cache")  # converted weights only
    return policy_weights(str(write_gguf(policy_dir, tmp_path / "tiny.gguf")))


def top_logprobs(url, ids, lora):
    r = httpx.post(url, json={"prompt": ids, "n_predict": 1, "temperature": 0, "n_probs": 5, "lora": lora}, timeout=60)
    return {t["id"]: t["logprob"] for t in r.json()["completion_probabilities"][0]["top_logprobs"]}


def test_the_server_samples_from_the_adapter_peft_trained(tiny_gguf, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_gguf.path),
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.5)  # a trained-looking adapter that moves the distribution
    model.save_pretrained(tmp_path / "peft")
    engine = LlamaServerEngine(tiny_gguf.gguf, tiny_gguf.path, tmp_path, parallel=2, ctx_per_slot=512)
    try:
        engine.load_adapter(tmp_path / "peft")
        url = engine.server.ensure_running().removesuffix("/v1") + "/completion"
        ids = [5, 17, 200, 33]
        with torch.no_grad():
            trained = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], -1)
            with model.disable_adapter():
                base = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], -1)
        served = top_logprobs(url, ids, [{"id": 0, "scale": 1.0}])
        assert all(abs(served[i] - float(trained[i])) < 1e-3 for i in served)
        assert set(served) == set(trained.topk(5).indices.tolist())
        off = top_logprobs(url, ids, [{"id": 0, "scale": 0.0}])
        assert all(abs(off[i] - float(base[i])) < 1e-3 for i in off)
        completions = engine.complete([ids, ids], engine_sampling(), [1, 2])
        assert all(0 < len(c) <= 8 for c in completions) and completions[0] != completions[1]
    finally:
        engine.close()


def engine_sampling():
    from orchrm.grpo.sampler import Sampling

    return Sampling(max_tokens=8, temperature=1.0, top_p=1.0)


def test_grpo_trains_with_plans_from_llama_server(tiny_gguf, tmp_path):
    out = tmp_path / "run"
    cfg = config(sampler="server", policy=str(tiny_gguf.gguf))
    ledger = open_run(out, cfg)
    try:
        result = train_orchestrator(cfg, make_task(tmp_path), tiny_gguf, out, ledger=ledger, reward=count_b)
    finally:
        ledger.close()
    assert result.steps == 2 and (out / "sampler" / "adapter.gguf").is_file()  # converted after step 1
    tokens = json.loads((out / "tokens.json").read_text())["categories"]
    # TRL counts every sample's prompt; llama-server read each group's once (n_cmpl): per sample the counts agree
    assert tokens["plan"]["calls"] == 8 and tokens["plan"]["per_sample_tokens"] == int(
        [h for h in result.log_history if "num_tokens" in h][-1]["num_tokens"]
    )
    assert {json.loads(x)["backend"] for x in (out / "tokens.jsonl").read_text().splitlines()} == {"llama-server"}
    assert [t.step for t in result.timings] == [1, 2] and result.timings[1].sync_s > 0
