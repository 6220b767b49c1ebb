"""`train-rm` under `accelerate launch` with two CPU processes (gloo): it runs, only the main process writes
the model folder, and held-out accuracy matches one process with the same global batch."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchrm.pairs.builder import PairStats
from orchrm.pairs.rows import write_pairs_dir
from orchrm.rm import RewardModel
from synthetic_pairs import make_rows
from tiny_policy import tiny_policy

SRC = Path(__file__).resolve().parents[2] / "src"
ACCELERATE = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")

pytestmark = pytest.mark.skipif(ACCELERATE is None, reason="accelerate's launcher is not installed")


def _train(
    pairs: Path, backbone: Path, out: Path, processes: int, batch_size: int, tmp: Path
) -> subprocess.CompletedProcess:
    verb = [
        "-m",
        "orchrm",
        "train-rm",
        str(pairs),
        "--out",
        str(out),
        "--backbone",
        str(backbone),
        "--epochs",
        "3",
        "--batch-size",
        str(batch_size),
        "--lr",
        "1e-3",
        "--max-length",
        "96",
        "--center",
        "0",
    ]
    if processes == 1:
        cmd = [sys.executable, *verb]
    else:
        # --multi_gpu picks accelerate's torchrun launcher; with no GPU (and use_cpu) the processes use gloo.
        cmd = [
            ACCELERATE,
            "launch",
            "--multi_gpu",
            "--num_processes",
            str(processes),
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            "--main_process_port",
            "0",
            *verb,
        ]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "TMPDIR": str(tmp),
    }
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp")
    write_pairs_dir(root / "pairs", make_rows(48), make_rows(16, offset=100), PairStats())
    return root, tiny_policy(root / "backbone")


def test_two_processes_train_like_one(setup):
    root, backbone = setup
    scratch = root / "scratch"
    scratch.mkdir()
    one = _train(root / "pairs", backbone, root / "one", processes=1, batch_size=8, tmp=scratch)
    assert one.returncode == 0, one.stderr[-3000:]
    # Two processes of 4 pairs each take the same 8 pairs a step as one process of 8.
    two = _train(root / "pairs", backbone, root / "two", processes=2, batch_size=4, tmp=scratch)
    assert two.returncode == 0, two.stderr[-3000:]
    assert two.stdout.count("kept epoch") == 1, two.stdout  # only the main process reports
    siblings = [p.name for p in root.iterdir() if p.name.startswith(".two.")]
    assert siblings == [], siblings  # the atomic write left nothing half-done beside the folder
    assert [p.name for p in scratch.iterdir() if p.name.startswith("orchrm-rm-")] == []  # shared checkpoints removed
    m1 = RewardModel.load(root / "one").card.metrics
    m2 = RewardModel.load(root / "two").card.metrics
    print(json.dumps({"one": m1["val_accuracy"], "two": m2["val_accuracy"]}))
    assert m1["train_pairs"] == m2["train_pairs"] == 48 and m1["val_pairs"] == m2["val_pairs"] == 16
    assert m2["val_accuracy"] == pytest.approx(m1["val_accuracy"], abs=1 / 16 + 1e-9)  # one pair of noise
    losses = lambda m: [h["train_loss"] for h in m["history"]]  # noqa: E731
    assert losses(m2) == pytest.approx(losses(m1), rel=0.05, abs=0.02)
