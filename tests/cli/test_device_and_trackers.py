"""`--device` on the verbs that run the reward model and `--report-to` on the training verbs, as a user meets
them: a GPU asked for on a machine without one, or a tracker not installed, is one line before any work."""

import importlib.util
import subprocess
import sys

import pytest
import torch


def orchrm(*args):
    return subprocess.run([sys.executable, "-m", "orchrm", *args], capture_output=True, text=True, timeout=300)


def error_line(result):
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_one_line_before_any_work(tmp_path):
    requests = tmp_path / "plans.jsonl"
    requests.write_text('{"question": "q", "plans": ["p"]}\n')
    missing = str(tmp_path / "no-such")  # the device is refused before any of these is looked at
    for args in (
        ("score", str(requests), "--rm", missing, "--out", str(tmp_path / "out.jsonl")),
        ("serve", "--rm", missing, "--port", "1"),
        ("train-rm", missing, "--out", str(tmp_path / "rm")),
        ("bon", "--task", "chain_sum", "--rm", missing, "--out", str(tmp_path / "bon")),
        ("train-orchestrator", "--task", "chain_sum", "--rm", missing, "--out", str(tmp_path / "grpo")),  # --reward rm
        ("demo", "--task", "chain_sum", "--out", str(tmp_path / "demo")),
    ):
        line = error_line(orchrm(*args, "--device", "cuda"))
        assert "--device cuda" in line and "no CUDA GPU" in line, args
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "rm").exists() and not (tmp_path / "grpo").exists()
    assert not (tmp_path / "demo").exists()


def test_an_unknown_device_is_a_usage_error(tmp_path):
    out = orchrm("score", str(tmp_path / "x.jsonl"), "--rm", str(tmp_path), "--device", "tpu")
    assert out.returncode == 2 and "tpu" in out.stderr


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed")
def test_a_tracker_not_installed_is_one_line_before_training(tmp_path):
    line = error_line(
        orchrm("train-rm", str(tmp_path / "no-pairs"), "--out", str(tmp_path / "rm"), "--report-to", "wandb")
    )
    assert line.endswith("--report-to wandb: the wandb package is not installed (pip install wandb)")
    out = tmp_path / "run"
    line = error_line(orchrm("train-orchestrator", "--task", "chain_sum", "--out", str(out), "--report-to", "wandb"))
    assert "the wandb package is not installed" in line and not out.exists()  # no run folder, no policy loaded


def test_the_flags_are_in_the_help():
    for verb in ("score", "serve", "train-rm", "bon", "train-orchestrator", "demo"):
        assert "--device" in orchrm(verb, "--help").stdout, verb
    for verb in ("train-rm", "train-orchestrator"):
        assert "--report-to" in orchrm(verb, "--help").stdout, verb
