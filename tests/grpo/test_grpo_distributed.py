"""`train-orchestrator` under `accelerate launch` with two CPU processes (gloo), on the tiny policy as a GGUF
and a tiny RM: `auto` samples with TRL, every sampled token is counted once (TRL's own count, gathered over
the processes, is the check), checkpoints are sealed with both processes' files, one process writes the
adapter and reports, and a run extended by a step resumes without losing or double-counting anything."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mas_fakes import make_task
from orchrm.grpo.checkpoints import SEAL_FILE, last_checkpoint
from tiny_policy import tiny_policy, tiny_rm, write_gguf

SRC = Path(__file__).resolve().parents[2] / "src"
ACCELERATE = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")

pytestmark = pytest.mark.skipif(ACCELERATE is None, reason="accelerate's launcher is not installed")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("grpo-ddp")
    make_task(root)  # writes qs.jsonl
    gguf = write_gguf(tiny_policy(root / "policy"), root / "tiny.gguf")
    return root, gguf, tiny_rm(root / "rm", tasks=["chain_sum"])


def _train(setup, steps: int) -> subprocess.CompletedProcess:
    root, gguf, rm = setup
    # --multi_gpu picks accelerate's torchrun launcher; with no GPU (and use_cpu) the processes use gloo.
    cmd = [
        ACCELERATE,
        *"launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no --dynamo_backend no".split(),
        *"--main_process_port 0 -m orchrm train-orchestrator".split(),
        *["--task", f"jsonl:{root / 'qs.jsonl'}", "--policy", str(gguf), "--reward", "rm", "--rm", str(rm)],
        *["--out", str(root / "run"), "--steps", str(steps), "--save-steps", "1"],
        *"--group-size 4 --n-questions 2 --plan-max-tokens 8".split(),
    ]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "ORCHRM_CACHE_DIR": str(root / "cache"),
        "COLUMNS": "200",
    }
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _check_tokens(run: Path, steps: int) -> None:
    """Each checkpoint's seal holds TRL's own count of the tokens sampled up to it (prompt + completion, over
    both processes); tokens.json holds the last, and every sampled plan is one `plan` call."""
    for step in range(1, steps + 1):
        ckpt = run / "checkpoints" / f"checkpoint-{step}"
        seal = json.loads((ckpt / SEAL_FILE).read_text())
        assert {"rng_state_0.pth", "rng_state_1.pth"} <= set(seal["files"])  # sealed after both processes saved
        trl_count = [
            h["num_tokens"]
            for h in json.loads((ckpt / "trainer_state.json").read_text())["log_history"]
            if "num_tokens" in h
        ]
        plan, train = seal["tokens"]["categories"]["plan"], seal["tokens"]["categories"]["train"]
        assert plan["total_tokens"] == trl_count[-1] and plan["calls"] == 4 * step
        # the update reads each process's share of a group's prompt once: per sample it would equal plan
        assert (
            train["per_sample_tokens"] == plan["per_sample_tokens"] and train["prompt_tokens"] < plan["prompt_tokens"]
        )
    tokens = json.loads((run / "tokens.json").read_text())
    assert tokens == seal["tokens"]
    samples = _lines(run / "samples.jsonl")
    assert len(samples) == tokens["categories"]["plan"]["calls"] == 4 * steps
    assert sorted(s["step"] for s in samples) == [
        s for s in range(steps) for _ in range(4)
    ]  # 4 plans a step, once each
    assert sum(s["completion_tokens"] for s in samples) == tokens["categories"]["plan"]["completion_tokens"]
    # each process appended only its own shard, to its own ledger
    assert len(_lines(run / "tokens.jsonl")) == len(_lines(run / "tokens.rank1.jsonl")) == 2 * 2 * steps
    timings = _lines(run / "steps.jsonl")
    assert [t["step"] for t in timings] == list(range(1, steps + 1)) and all(t["plans"] == 4 for t in timings)
    assert sum(t["completion_tokens"] for t in timings) == tokens["categories"]["plan"]["completion_tokens"]


def test_two_processes_count_every_token_once_and_resume(setup):
    run = setup[0] / "run"
    first = _train(setup, steps=2)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-6000:]
    assert first.stdout.count("orchestrator training: 2 steps") == 1 and first.stdout.count("warning:") == 1, (
        first.stdout
    )
    assert json.loads((run / "run.json").read_text())["sampler"] == "trl"  # auto: no llama-server per process
    card = json.loads((run / "adapter" / "orchrm-adapter.json").read_text())
    assert card["steps"] == 2 and (run / "adapter" / "adapter_model.safetensors").is_file()
    assert [p.name for p in run.iterdir() if p.name.startswith(".")] == []  # no half-written sibling left
    assert last_checkpoint(run / "checkpoints") == run / "checkpoints" / "checkpoint-2"  # seals match the files
    _check_tokens(run, steps=2)

    again = _train(setup, steps=3)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-6000:]
    assert " ".join(again.stdout.split()).count("orchestrator training: 3 steps (resumed from checkpoint-2)") == 1, (
        again.stdout
    )
    assert json.loads((run / "adapter" / "orchrm-adapter.json").read_text())["steps"] == 3
    _check_tokens(run, steps=3)
