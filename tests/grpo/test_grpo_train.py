"""GRPO on a tiny random policy: it learns from a scripted reward, counts every token, seals checkpoints
and resumes from the last sealed one, also after kill -9."""

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from safetensors.torch import load_file

from mas_fakes import make_task
from orchrm.errors import ConfigError
from orchrm.grpo import GRPORunConfig, open_run, policy_weights, train_orchestrator
from orchrm.grpo.adapter import ADAPTER_CARD, ADAPTER_DIR
from orchrm.grpo.checkpoints import SEAL_FILE, last_checkpoint
from orchrm.grpo.train import CHECKPOINTS_DIR


def count_b(prompts, completions, **kw):
    """Scripted reward: how many b's the plan has (random text varies in it, so groups have spread)."""
    return [float(c[0]["content"].count("b")) + 0.1 * len(c[0]["content"]) for c in completions]


def config(**kw):
    base = dict(
        task="jsonl",
        policy="tiny",
        reward="custom",
        group_size=4,
        n_questions=4,
        max_steps=2,
        save_steps=1,
        plan_max_tokens=12,
        learning_rate=5e-2,
        lora_r=4,
        lora_alpha=8,
        seed=0,
    )
    return GRPORunConfig(**{**base, **kw})


def run(tmp_path, policy_dir, out, **kw):
    cfg = config(**kw)
    ledger = open_run(out, cfg)
    try:
        return train_orchestrator(
            cfg, make_task(tmp_path), policy_weights(policy_dir), out, ledger=ledger, reward=count_b
        )
    finally:
        ledger.close()


def test_grpo_trains_the_adapter_and_counts_every_token(tmp_path, policy_dir):
    out = tmp_path / "run"
    result = run(tmp_path, policy_dir, out)
    assert result.steps == 2 and result.resumed_from is None
    adapter = out / ADAPTER_DIR
    names = sorted(p.name for p in adapter.iterdir())
    assert (
        "adapter_model.safetensors" in names
        and ADAPTER_CARD in names
        and not any(n.endswith((".bin", ".pt")) for n in names)
    )
    lora_b = [v for k, v in load_file(adapter / "adapter_model.safetensors").items() if "lora_B" in k]
    assert lora_b and any(float(v.abs().max()) > 0 for v in lora_b)  # LoRA B starts at zero: nonzero means it learned
    card = json.loads((adapter / ADAPTER_CARD).read_text())
    assert card["steps"] == 2 and card["base"] == "tiny" and card["config"]["group_size"] == 4

    tokens = json.loads((out / "tokens.json").read_text())["categories"]
    logged = [h for h in result.log_history if "num_tokens" in h]
    sampled = int(logged[-1]["num_tokens"])  # TRL's own count of prompt + completion tokens sampled
    plan, train = tokens["plan"], tokens["train"]
    assert plan["calls"] == 2 * 4 and plan["total_tokens"] == sampled  # 2 steps x 1 question x group of 4
    # the update reads each group's prompt once (shared_prompt.py): per sample it would be TRL's count
    assert train["per_sample_tokens"] == sampled and plan["completion_tokens"] <= 8 * 12
    assert train["total_tokens"] == sampled - 2 * 3 * (plan["prompt_tokens"] // 8)  # 2 steps x 3 rows sharing
    assert set(tokens) == {"plan", "train"}
    lines = (out / "tokens.jsonl").read_text().splitlines()
    assert len(lines) == 16 and {json.loads(x)["category"] for x in lines} == {"plan", "train"}


def test_resume_continues_from_the_last_sealed_checkpoint(tmp_path, policy_dir):
    out = tmp_path / "run"
    run(tmp_path, policy_dir, out, max_steps=1)
    ckpt = last_checkpoint(out / CHECKPOINTS_DIR)
    assert ckpt is not None and ckpt.name == "checkpoint-1" and (ckpt / SEAL_FILE).is_file()
    assert (ckpt / "adapter_model.safetensors").is_file()
    # A save cut short by a kill: no seal. It is removed, and the run resumes from checkpoint-1.
    torn = out / CHECKPOINTS_DIR / "checkpoint-2"
    torn.mkdir()
    (torn / "adapter_model.safetensors").write_bytes(b"half")
    result = run(tmp_path, policy_dir, out, max_steps=2)
    assert (
        result.resumed_from == ckpt
        and result.steps == 2
        and not (torn / "adapter_model.safetensors").read_bytes() == b"half"
    )
    tokens = json.loads((out / "tokens.json").read_text())["categories"]
    assert tokens["plan"]["calls"] == 8  # the first run's 4 samples stay counted, the resumed run adds 4
    with pytest.raises(ConfigError, match="other settings"):
        open_run(out, config(group_size=2))


def test_a_changed_checkpoint_is_refused(tmp_path, policy_dir):
    from orchrm.errors import ChecksumMismatch

    out = tmp_path / "run"
    run(tmp_path, policy_dir, out, max_steps=1)
    weights = out / CHECKPOINTS_DIR / "checkpoint-1" / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\1")
    with pytest.raises(ChecksumMismatch, match="refusing to resume"):
        last_checkpoint(out / CHECKPOINTS_DIR)


KILLED_RUN = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {support!r})
    from pathlib import Path
    from transformers import TrainerCallback
    from mas_fakes import make_task
    from test_grpo_train import config, count_b
    from orchrm.grpo import open_run, policy_weights, train_orchestrator

    class Kill(TrainerCallback):
        def on_save(self, args, state, control, **kw):
            if state.global_step == 1:
                os.kill(os.getpid(), signal.SIGKILL)

    out, tmp = Path({out!r}), Path({tmp!r})
    cfg = config(max_steps=2)
    ledger = open_run(out, cfg)
    train_orchestrator(cfg, make_task(tmp), policy_weights(Path({policy!r})), out, ledger=ledger, reward=count_b, callbacks=[Kill()])
    """
)


def test_a_run_killed_with_sigkill_resumes(tmp_path, policy_dir):
    out = tmp_path / "run"
    here = Path(__file__).parent
    script = KILLED_RUN.format(
        support=str(here.parent / "support"), out=str(out), tmp=str(tmp_path), policy=str(policy_dir)
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert not (out / ADAPTER_DIR).exists()
    result = run(tmp_path, policy_dir, out, max_steps=2)
    assert result.resumed_from is not None and result.resumed_from.name == "checkpoint-1" and result.steps == 2
    assert json.loads((out / "tokens.json").read_text())["categories"]["plan"]["calls"] == 8


def test_a_step_redone_after_a_kill_supersedes_its_first_attempt_in_the_step_times(tmp_path, policy_dir):
    import shutil

    from orchrm.grpo.timing import read_steps

    out = tmp_path / "run"
    run(tmp_path, policy_dir, out, max_steps=2)
    # Killed after step 2 was timed and sampled but before its checkpoint was sealed: the resume redoes step 2.
    shutil.rmtree(out / CHECKPOINTS_DIR / "checkpoint-2")
    result = run(tmp_path, policy_dir, out, max_steps=2)
    assert result.resumed_from is not None and result.resumed_from.name == "checkpoint-1"
    lines = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert [(x["step"], x["attempt"]) for x in lines] == [(1, 0), (2, 0), (2, 1)]  # what was spent stays written
    assert [(t.step, t.attempt) for t in read_steps(out)] == [(1, 0), (2, 1)]


def test_a_finished_run_started_again_trains_no_further(tmp_path, policy_dir):
    from safetensors.torch import load_file

    out = tmp_path / "run"
    first = run(tmp_path, policy_dir, out, max_steps=1)
    steps, ledger = (out / "steps.jsonl").read_text(), (out / "tokens.jsonl").read_text()
    tokens = json.loads((out / "tokens.json").read_text())
    again = run(tmp_path, policy_dir, out, max_steps=1)
    assert first.steps == again.steps == 1 and again.resumed_from == out / CHECKPOINTS_DIR / "checkpoint-1"
    assert (out / "steps.jsonl").read_text() == steps and (out / "tokens.jsonl").read_text() == ledger  # no step taken
    assert json.loads((out / "tokens.json").read_text())["total"] == tokens["total"]
    saved = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    sealed = load_file(str(out / CHECKPOINTS_DIR / "checkpoint-1" / "adapter_model.safetensors"))
    assert saved.keys() == sealed.keys() and all(bool((saved[k] == sealed[k]).all()) for k in saved)


def test_the_from_scratch_remedies_train_through_the_shared_prompt_pass(tmp_path, policy_dir):
    """KL to the base (the adapter switched off is the reference) and an entropy bonus reach TRL and train."""
    from orchrm.grpo.train import grpo_args

    args = grpo_args(config(beta=0.04, entropy_coef=0.05), tmp_path, progress=False)
    assert (args.beta, args.entropy_coef) == (0.04, 0.05)
    result = run(tmp_path, policy_dir, tmp_path / "run", beta=0.04, entropy_coef=0.05, max_steps=1)
    logged = [h for h in result.log_history if "kl" in h]
    assert result.steps == 1 and logged and math.isfinite(logged[-1]["kl"]) and math.isfinite(logged[-1]["loss"])
