"""`train-rm` with one process against two data-parallel processes (`accelerate launch`, gloo on CPU).

Both train on the same committed pairs with the same global batch (one process of `--batch-size B`, two of
B/2: each step sees the same B pairs), then the held-out pairwise accuracy, per-epoch training loss and
wall time of each are compared.

    PYTHONPATH=src python bench/rm_ddp.py [--pairs bench/results/orchestration/mix_world_qa+chain_sum/pairs]

Writes bench/results/rm_ddp.json, one entry per pairs folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchrm.rm import RewardModel
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

RESULTS = Path(__file__).parent / "results" / "rm_ddp.json"
PAIRS = Path(__file__).parent / "results" / "orchestration" / "mix_world_qa+chain_sum" / "pairs"


def _run(pairs: Path, out: Path, processes: int, batch_size: int, epochs: int) -> dict:
    verb = [
        "-m",
        "orchrm",
        "train-rm",
        str(pairs),
        "--out",
        str(out),
        "--epochs",
        str(epochs),
        "--batch-size",
        str(batch_size // processes),
    ]
    if processes == 1:
        cmd = [sys.executable, *verb]
    else:
        accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or "accelerate"
        cmd = [
            accelerate,
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
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{processes}-process training failed:\n{done.stderr[-3000:]}")
    m = RewardModel.load(out).card.metrics
    return {
        "processes": processes,
        "batch_size_per_process": batch_size // processes,
        "wall_s": round(wall, 1),
        "val_accuracy": m["val_accuracy"],
        "val_accuracy_per_source": m["val_accuracy_per_source"],
        "best_epoch": m["best_epoch"],
        "epochs_run": m["epochs_run"],
        "train_loss_per_epoch": [round(h["train_loss"], 5) for h in m["history"]],
        "val_accuracy_per_epoch": [h["accuracy"] for h in m["history"]],
        "train_pairs": m["train_pairs"],
        "val_pairs": m["val_pairs"],
    }


def _with_manifest(pairs: Path, scratch: Path) -> Path:
    """`pairs`, or for a folder committed before pairs folders had a manifest, the same rows rewritten
    with one (train-rm refuses a folder without)."""
    from orchrm.pairs import MANIFEST_FILE, STATS_FILE, TRAIN_FILE, VAL_FILE, PairStats, read_rows, write_pairs_dir

    if (pairs / MANIFEST_FILE).is_file():
        return pairs
    stats = PairStats.model_validate_json((pairs / STATS_FILE).read_text())
    write_pairs_dir(scratch, read_rows(pairs / TRAIN_FILE), read_rows(pairs / VAL_FILE), stats)
    return scratch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=Path, default=PAIRS)
    p.add_argument("--batch-size", type=int, default=8, help="Global batch (split over the processes).")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        pairs = _with_manifest(args.pairs, Path(tmp) / "pairs")
        rows = [_run(pairs, Path(tmp) / f"rm{n}", n, args.batch_size, args.epochs) for n in (1, 2)]
    for r in rows:
        print(
            f"{r['processes']} process(es): held-out accuracy {r['val_accuracy']:.4f} (epoch {r['best_epoch']}), "
            f"losses {r['train_loss_per_epoch']}, {r['wall_s']} s"
        )
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "shared": "2 CPU cores shared with other jobs: wall times are indicative only",
            "load_average_at_start": [round(x, 2) for x in load],
        },
        "pairs": str(args.pairs.relative_to(Path(__file__).parent.parent))
        if args.pairs.is_relative_to(Path(__file__).parent.parent)
        else str(args.pairs),
        "global_batch": args.batch_size,
        "epochs": args.epochs,
        "runs": rows,
        "accuracy_difference": round(rows[1]["val_accuracy"] - rows[0]["val_accuracy"], 4),
        "one_pair_of_val": round(1 / rows[0]["val_pairs"], 4),
    }
    existing = json.loads(args.out.read_text()) if args.out.exists() else {}
    existing[result["pairs"]] = result  # one entry per pairs folder
    args.out.write_text(json.dumps({**existing, "stamp": stamp()}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
