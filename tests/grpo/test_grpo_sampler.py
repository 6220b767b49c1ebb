"""The server sampler: plans come from an engine that is handed the trainer's current LoRA adapter after
every optimiser step (also after a resume), every sampled token is counted under `plan`, and each step's
time is split into generation, reward and update. A scripted engine stands in for llama-server."""

import json
import random
import tarfile

import pytest
import torch
from safetensors.torch import load_file
from test_grpo_train import config, count_b

from mas_fakes import make_task
from orchrm.errors import ConfigError
from orchrm.grpo import GRPORunConfig, open_run, policy_weights, resolve_sampler, train_orchestrator
from orchrm.grpo.checkpoints import last_checkpoint
from orchrm.grpo.train import CHECKPOINTS_DIR, grpo_args, plans_per_process
from orchrm.llm.weights import PolicyWeights


class ScriptedEngine:
    """Samples random token ids (some plans end with the end-of-turn token) and keeps what it was given."""

    backend = "scripted"

    def __init__(self, eos: int, vocab: int = 250):
        self.eos, self.vocab = eos, vocab
        self.loaded = []  # None, or the adapter's tensors, per load
        self.calls = []  # (prompt ids, seeds) per generation
        self.sampled = []

    def load_adapter(self, peft_dir):
        self.loaded.append(None if peft_dir is None else load_file(peft_dir / "adapter_model.safetensors"))

    def complete(self, prompt_ids, sampling, seeds):
        self.calls.append((prompt_ids, seeds))
        out = []
        for seed in seeds:
            rng = random.Random(seed)
            ids = [rng.randrange(self.vocab) for _ in range(rng.randrange(1, sampling.max_tokens))]
            out.append(ids + [self.eos] if rng.random() < 0.5 else ids + [1] * (sampling.max_tokens - len(ids)))
        self.sampled.extend(out)
        return out

    def close(self):
        pass


def run(tmp_path, policy_dir, out, engine, **kw):
    cfg = config(sampler="server", **kw)
    ledger = open_run(out, cfg)
    try:
        return train_orchestrator(
            cfg, make_task(tmp_path), policy_weights(policy_dir), out, ledger=ledger, reward=count_b, engine=engine
        )
    finally:
        ledger.close()


def eos_of(policy_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(policy_dir).eos_token_id


def lora_b_max(tensors):
    return max(float(v.abs().max()) for k, v in tensors.items() if "lora_B" in k)


def test_the_server_sampler_follows_the_adapter_and_counts_every_token(tmp_path, policy_dir):
    out = tmp_path / "run"
    engine = ScriptedEngine(eos_of(policy_dir))
    result = run(tmp_path, policy_dir, out, engine, max_steps=2)
    assert result.steps == 2
    # Step 0 samples from the bare base (LoRA B is still zero); after step 1 the trained adapter is loaded.
    assert len(engine.loaded) == 2 and engine.loaded[0] is None and lora_b_max(engine.loaded[1]) > 0
    assert [len(ids) for ids, _ in engine.calls] == [4, 4]  # one question x group of 4, per step
    seeds = [s for _, ss in engine.calls for s in ss]
    assert len(set(seeds)) == len(seeds)  # every plan its own seed

    prompt_lens = [len(ids) for ids, _ in engine.calls for ids in ids]
    tokens = json.loads((out / "tokens.json").read_text())["categories"]
    assert tokens["plan"]["calls"] == 8
    assert tokens["plan"]["completion_tokens"] == sum(len(c) for c in engine.sampled)  # exactly what was sampled
    # the dataset's count agrees with the ids sent; a group's prompt is read once (n_cmpl) and so billed once
    assert tokens["plan"]["prompt_tokens"] == sum(len(ids[0]) for ids, _ in engine.calls)
    assert tokens["plan"]["per_sample_tokens"] - tokens["plan"]["completion_tokens"] == sum(prompt_lens)
    assert tokens["train"]["total_tokens"] == tokens["plan"]["total_tokens"]  # the update reads it once too
    trl_count = int([h for h in result.log_history if "num_tokens" in h][-1]["num_tokens"])
    assert trl_count == tokens["plan"]["per_sample_tokens"]
    backends = {json.loads(x)["backend"] for x in (out / "tokens.jsonl").read_text().splitlines()}
    assert backends == {"scripted"}

    lines = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2] and all(x["sampler"] == "server" and x["plans"] == 4 for x in lines)
    for x in lines:
        assert x["generation_s"] >= x["sync_s"] >= 0 and x["reward_s"] >= 0 and x["update_s"] > 0
        assert x["step_s"] == pytest.approx(x["generation_s"] + x["reward_s"] + x["update_s"], abs=1e-6)
    assert lines[1]["sync_s"] > 0  # the adapter was saved and handed over before step 2's plans
    assert [t.step for t in result.timings] == [1, 2]


def test_a_resumed_run_samples_with_the_checkpointed_adapter(tmp_path, policy_dir):
    out = tmp_path / "run"
    run(tmp_path, policy_dir, out, ScriptedEngine(eos_of(policy_dir)), max_steps=1)
    saved = load_file(last_checkpoint(out / CHECKPOINTS_DIR) / "adapter_model.safetensors")
    engine = ScriptedEngine(eos_of(policy_dir))
    result = run(tmp_path, policy_dir, out, engine, max_steps=2)
    assert result.resumed_from is not None and result.steps == 2
    [first] = engine.loaded  # one generation, after the resume: the checkpoint's adapter, not a fresh one
    assert set(first) == set(saved) and all(torch.equal(first[k], saved[k]) for k in saved)
    assert json.loads((out / "tokens.json").read_text())["categories"]["plan"]["calls"] == 8


def test_the_sampler_may_change_on_resume_but_other_settings_may_not(tmp_path):
    old = config()
    assert config(sampler="server", max_steps=5).differences(old) == []
    assert config(sampler="server", group_size=2).differences(old) == ["group_size: 4 -> 2"]
    legacy = {k: v for k, v in old.model_dump().items() if k != "sampler"}  # a run.json from before the option
    assert GRPORunConfig.model_validate(legacy).sampler == "trl"


def test_vllm_mode_is_trls_own(tmp_path):
    assert grpo_args(config(sampler="vllm"), tmp_path, progress=False).use_vllm
    args = grpo_args(config(sampler="server"), tmp_path, progress=False)
    assert not args.use_vllm


def test_auto_picks_the_server_for_a_gguf_policy_on_a_cpu(tmp_path, monkeypatch):
    monkeypatch.setattr("orchrm.grpo.sampler.on_gpu", lambda: False)
    monkeypatch.setattr("orchrm.grpo.sampler.vllm_available", lambda: False)
    folder = PolicyWeights(name="tiny", path=tmp_path, sha256="0" * 64)
    gguf = PolicyWeights(name="tiny", path=tmp_path, sha256="0" * 64, gguf=tmp_path / "tiny.gguf")
    assert resolve_sampler("auto", gguf) == "server" and resolve_sampler("auto", folder) == "trl"
    assert resolve_sampler("trl", gguf) == "trl"
    with pytest.raises(ConfigError, match="needs a GGUF policy"):
        resolve_sampler("server", folder)
    with pytest.raises(ConfigError, match="CUDA GPU and the vllm package"):
        resolve_sampler("vllm", gguf)
    monkeypatch.setattr("orchrm.grpo.sampler.on_gpu", lambda: True)
    assert resolve_sampler("auto", gguf) == "trl"  # a GPU without vllm: TRL's generate on the GPU
    monkeypatch.setattr("orchrm.grpo.sampler.vllm_available", lambda: True)
    assert resolve_sampler("auto", gguf) == "vllm"


def test_several_processes_sample_with_trl_on_a_cpu_and_split_each_step(tmp_path, monkeypatch):
    monkeypatch.setattr("orchrm.grpo.sampler.on_gpu", lambda: False)
    gguf = PolicyWeights(name="tiny", path=tmp_path, sha256="0" * 64, gguf=tmp_path / "tiny.gguf")
    assert resolve_sampler("auto", gguf, processes=2) == "trl"  # a llama-server per process would share the cores
    with pytest.raises(
        ConfigError, match=r"--sampler server samples in one process; this run has 2 \(use --sampler trl"
    ):
        resolve_sampler("server", gguf, processes=2)
    assert resolve_sampler("trl", gguf, processes=2) == "trl"
    assert plans_per_process(config(group_size=4, questions_per_step=3), 2) == 6  # the step stays 12 plans
    with pytest.raises(ConfigError, match="do not split evenly over 4 processes"):
        plans_per_process(config(group_size=3, questions_per_step=2), 4)


def test_the_lora_converter_comes_from_the_pinned_sdist(tmp_path, monkeypatch):
    from orchrm.llm import server_build

    monkeypatch.setenv("ORCHRM_CACHE_DIR", str(tmp_path / "cache"))
    prefix = f"llama_cpp_python-{server_build.LLAMA_CPP_PYTHON_VERSION}/vendor/llama.cpp/"
    files = {
        "convert_lora_to_gguf.py": "print('convert')\n",
        "conversion/__init__.py": "",
        "gguf-py/gguf/__init__.py": "",
        "src/llama.cpp": "// not needed\n",
    }
    src = tmp_path / "src"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    sdist = (
        server_build.server_home()
        / "convert-work"
        / "sdist"
        / f"llama_cpp_python-{server_build.LLAMA_CPP_PYTHON_VERSION}.tar.gz"
    )
    sdist.parent.mkdir(parents=True)
    with tarfile.open(sdist, "w:gz") as tar:
        for name in files:
            tar.add(src / name, arcname=prefix + name)
    assert server_build.lora_converter() is None
    script = server_build.ensure_lora_converter(log=lambda m: None)
    assert (
        script == server_build.converter_home() / "convert_lora_to_gguf.py"
        and script.read_text() == "print('convert')\n"
    )
    home = server_build.converter_home()
    assert (home / "conversion" / "__init__.py").is_file() and (home / "gguf-py" / "gguf" / "__init__.py").is_file()
    assert not (home / "src").exists() and not sdist.exists()  # only the converter is kept; the download is gone
    assert server_build.ensure_lora_converter(log=lambda m: None) == script


def test_the_server_command_names_the_adapter(tmp_path):
    from orchrm.llm.models import ModelFile
    from orchrm.llm.server import LlamaServer

    server = LlamaServer(tmp_path / "llama-server", ModelFile(name="m", path=tmp_path / "m.gguf", sha256="0"))
    assert "--lora" not in server._command(8080)
    server.lora = tmp_path / "adapter.gguf"
    cmd = server._command(8080)
    assert cmd[cmd.index("--lora") + 1] == str(tmp_path / "adapter.gguf")


def test_a_group_of_plans_is_one_request_with_explicit_adapter_scale(tmp_path):
    import httpx

    from orchrm.grpo.sampler import LlamaServerEngine, Sampling

    seen = []

    def handler(request):
        body = json.loads(request.content)
        seen.append(body)
        n, first = body["n_cmpl"], body["prompt"][0]
        results = [{"index": j, "tokens": [first, body["seed"] + j], "stop_type": "eos"} for j in range(n)]
        return httpx.Response(200, json=list(reversed(results)))  # any order: placed by index

    class Server:
        lora = tmp_path / "adapter.gguf"

        def ensure_running(self):
            return "http://127.0.0.1:1/v1"

    engine = object.__new__(LlamaServerEngine)
    engine.server, engine.parallel, engine._client = Server(), 4, httpx.Client(transport=httpx.MockTransport(handler))
    out = engine.complete(
        [[7, 1], [7, 1], [7, 1], [9, 2], [9, 2]],
        Sampling(max_tokens=5, temperature=0.8, top_p=0.95),
        [10, 11, 12, 13, 14],
    )
    assert out == [[7, 10], [7, 11], [7, 12], [9, 13], [9, 14]]
    assert sorted((b["prompt"][0], b["n_cmpl"], b["seed"]) for b in seen) == [(7, 3, 10), (9, 2, 13)]
    for b in seen:
        assert b["lora"] == [{"id": 0, "scale": 1.0}] and b["samplers"] == ["temperature", "top_p"] and b["top_k"] == 0
        assert b["return_tokens"] and b["n_predict"] == 5 and b["temperature"] == 0.8
    with pytest.raises(ConfigError, match="needs as many server slots"):
        engine.complete([[1]] * 5, Sampling(max_tokens=5, temperature=0.8, top_p=0.95), list(range(5)))
