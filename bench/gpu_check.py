"""The CUDA paths on a lent GPU: GRPO orchestrator training and RM training, on random weights of real shapes.

Neither path had run on a GPU. Real weights cannot travel to a lent machine (64 MiB, no network), so the
policy is built there: the config and tokenizer of the embedded qwen2.5-coder-0.5b (from its converted folder
in the local policy cache), weights drawn at random and saved as safetensors. `policy_weights` takes that
plain transformers folder as it is; its sha256 is the weights file's, checked again wherever a card names it
(the adapter's card, the RM's backbone). Rewards and accuracies mean nothing on random weights: what is
checked is that each path runs on CUDA, how long it takes, and that what it writes is sealed and loads back.

- `grpo-fp32`, `grpo-bf16`: `setup_run` (reward `valid`, sampler `auto`: `trl` on a GPU without vllm),
  group 8, 1 question a step; the step times from the run's steps.jsonl; the last checkpoint sealed (what
  `last_checkpoint` resumes from) and the adapter's files matching its card, which names the policy's sha256.
- `grpo-remedies`: `grpo-fp32` with issue #24's remedies for a collapsing policy, KL to the base (beta 0.04,
  its reference is the policy with its LoRA adapter off) and TRL's entropy bonus (0.05); the loss's kl and
  entropy terms logged.
- `rm-fp32`, `rm-bf16`: `train_from_folder` with `RMConfig(device="auto")` on issue #13's committed pairs,
  the decoder backbone (LoRA + value head) on the same random folder; the saved folder loaded back on the
  CPU (`RewardModel.load`) scores as the trained model did.
- `rm-scoring`: `orchrm score`'s path, `RewardModel.load(folder, device=...)`, on `rm-fp32`'s folder (or one
  trained here when that check did not run): the same (question, plan) items from the committed pairs scored on
  the CPU (fp32) and on the GPU (`--device auto`: bf16 where the GPU has it; fp32 on the GPU too), items a
  second for each, and the largest |score difference| from the CPU's against `BF16_TOLERANCE` (scaled by the
  scores' size), with the share of pairs whose chosen-vs-rejected order is unchanged. Without a GPU (`--tiny`
  on a CPU) only the CPU side runs and `auto` picks the CPU, so the difference is 0.

Each check runs in a child process under its own time limit, so one failure does not hide the others.

    python bench/gpu_check.py --config-from ~/.cache/orchrm/policies/<sha>-float32    # on the GPU machine
    python bench/gpu_check.py --config-from DIR --tiny --plan-max-tokens 32          # a CPU rehearsal

Writes bench/results/gpu_check.json (or --out) after every check.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

HERE = Path(__file__).parent
RESULTS = HERE / "results" / "gpu_check.json"
PAIRS = HERE / "results" / "orchestration" / "mix_world_qa+chain_sum" / "pairs"  # issue #13's committed pairs
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")
PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "safetensors", "pydantic")
#: The checks in the order they run (the first two are what matters), each with its time limit in seconds.
LIMITS = {
    "policy": 90,
    "grpo-fp32": 120,
    "rm-fp32": 100,
    "rm-scoring": 120,
    "grpo-bf16": 200,
    "rm-bf16": 90,
    "grpo-remedies": 150,
}
#: bf16 keeps 8 bits of mantissa (relative rounding 2^-8 a value); through a network's layers the score may move
#: by a few of those: the largest |GPU bf16 - CPU fp32| difference accepted, per unit of the largest |CPU score|
#: (at least 1).
BF16_TOLERANCE = 0.05
#: fp32 on the GPU against fp32 on the CPU: only the order of additions differs.
FP32_TOLERANCE = 1e-3


def build_policy(args: argparse.Namespace) -> dict[str, Any]:
    """A random-weight policy folder with the source's config and tokenizer (`--tiny`: 2 layers, hidden 64)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from orchrm.grpo import policy_weights
    from orchrm.llm import quiet_transformers

    config = AutoConfig.from_pretrained(args.config_from, local_files_only=True)
    if args.tiny:  # same vocabulary (the tokenizer must fit), a model small enough for 2 CPU cores
        config.update(
            {
                "num_hidden_layers": 2,
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "layer_types": config.layer_types[:2],
            }
        )
    target = policy_dir(args)
    shutil.rmtree(target, ignore_errors=True)
    torch.manual_seed(0)
    start = time.perf_counter()
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):  # drawing 630M numbers is faster there
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with quiet_transformers():
        model.save_pretrained(target, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (Path(args.config_from) / name).is_file():
            shutil.copy(Path(args.config_from) / name, target / name)
    weights = policy_weights(target)  # what a run will resolve: the folder's checks, its sha256
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "sha256": weights.sha256,
        "layers": config.num_hidden_layers,
        "hidden_size": config.hidden_size,
        "build_s": elapsed(start),
    }


def check_grpo(args: argparse.Namespace, bf16: bool, beta: float = 0.0, entropy_coef: float = 0.0) -> dict[str, Any]:
    """A few GRPO steps through `setup_run`, as `orchrm train-orchestrator` runs them (`beta`, `entropy_coef`:
    #24's remedies, KL to the base and an entropy bonus, whose terms are all the loss has on random weights)."""
    from orchrm.grpo import ADAPTER_CARD, AdapterCard, GRPORunConfig, checkpoints, last_checkpoint, setup_run

    remedies = bool(beta or entropy_coef)
    out = args.work / args.child  # the check's name: where `child` reads the steps of a run killed at its limit
    shutil.rmtree(out, ignore_errors=True)
    settings = GRPORunConfig(
        task=args.task,
        policy=str(policy_dir(args)),
        reward="valid",
        group_size=args.group,
        questions_per_step=1,
        n_questions=args.steps,
        max_steps=args.steps,
        save_steps=args.steps,
        plan_max_tokens=args.plan_max_tokens,
        bf16=bf16,
        beta=beta,
        entropy_coef=entropy_coef,
    )
    start = time.perf_counter()
    with setup_run(settings, out) as run:  # sampler "auto"
        sampler = run.config.sampler
        outcome = run.train()
    wall = elapsed(start)
    steps = steps_so_far(out)
    checkpoint = last_checkpoint(out / "checkpoints")  # None unless sealed and every file matches its seal
    final = dict(checkpoints(out / "checkpoints")).get(args.steps)  # checkpoint-N of the last step
    card = AdapterCard.model_validate_json((outcome.adapter / ADAPTER_CARD).read_text())
    return {
        "sampler": sampler,
        "steps_trained": outcome.steps,
        "wall_s": wall,
        "steps": steps,
        "losses": [round(h["loss"], 6) for h in outcome.log_history if "loss" in h],
        **{k: [round(h[k], 6) for h in outcome.log_history if k in h] for k in ("kl", "entropy") if remedies},
        "checkpoint_sealed": checkpoint is not None and checkpoint == final,
        "adapter_sealed": digests(outcome.adapter, ADAPTER_CARD) == card.files,
        "adapter_base_is_policy": card.base_sha256 == run.weights.sha256,
        **gpu_memory(),
    }


def check_rm(args: argparse.Namespace, bf16: bool) -> dict[str, Any]:
    """The decoder RM trained on the committed pairs, saved, loaded back on the CPU and scored again."""
    from orchrm import RewardModel, RMConfig
    from orchrm.pairs import read_pairs_dir
    from orchrm.rm import train_from_folder

    out = args.work / f"rm-{'bf16' if bf16 else 'fp32'}"
    shutil.rmtree(out, ignore_errors=True)
    config = RMConfig(backbone=str(policy_dir(args)), device="auto", epochs=args.rm_epochs, bf16=bf16)
    start = time.perf_counter()
    result = train_from_folder(args.pairs, out, config, progress=False)
    wall = elapsed(start)
    loaded = RewardModel.load(out)  # every file checked against the card, the backbone against its sha256
    _, val = read_pairs_dir(args.pairs)
    items = [(r.prompt, r.chosen) for r in val[:16]]
    trained, reloaded = result.model.score_rendered(items), loaded.score_rendered(items)
    return {
        "backbone_kind": loaded.card.backbone_kind,
        "train_pairs": loaded.card.metrics["train_pairs"],
        "val_pairs": loaded.card.metrics["val_pairs"],
        "epochs_run": loaded.card.metrics["epochs_run"],
        "train_s": round(result.train_seconds, 2),
        "pairs_per_s": round(result.pairs_per_second, 2),
        "wall_s": wall,
        "loaded_on": str(next(loaded.model.parameters()).device),
        "reload_max_score_diff": max(abs(a - b) for a, b in zip(trained, reloaded)),
        **gpu_memory(),
    }


def check_rm_scoring(args: argparse.Namespace) -> dict[str, Any]:
    """RM scoring throughput on the GPU (what `--device auto` picks: bf16 where supported) and in fp32 there,
    against the CPU's fp32, on the same items; the largest score differences and whether pairs keep their order."""
    import torch

    from orchrm import RewardModel, RMConfig, train_reward_model
    from orchrm.pairs import read_pairs_dir
    from orchrm.rm import CARD_FILE

    train, val = read_pairs_dir(args.pairs)
    folder = args.work / "rm-fp32"
    trained_here = not (folder / CARD_FILE).is_file()
    if trained_here:  # rm-fp32 did not run (or failed): the same backbone, 1 epoch on 16 pairs (the speed is the point)
        folder = args.work / "rm-scoring"
        config = RMConfig(backbone=str(policy_dir(args)), device="auto", epochs=1)
        train_reward_model(train[:16], [], config, progress=False).model.save(folder)
    rows = (val + train)[: max(1, args.score_items // 2)]
    items = [(r.prompt, text) for r in rows for text in (r.chosen, r.rejected)]  # chosen, rejected, chosen, ...

    def timed(rm: RewardModel) -> dict[str, Any]:
        rm.score_rendered(items[: args.score_batch], batch_size=args.score_batch)  # warm-up: kernels, allocator
        start = time.perf_counter()
        scores = rm.score_rendered(items, batch_size=args.score_batch)  # .tolist() waits for the GPU
        seconds = time.perf_counter() - start
        dtype = str(next(rm.model.parameters()).dtype).removeprefix("torch.")
        return {
            "device": rm.device,
            "dtype": dtype,
            "items_per_s": round(len(items) / seconds, 2),
            "seconds": round(seconds, 3),
            "scores": scores,
        }

    def compare(cpu: list[float], other: list[float], tolerance: float) -> dict[str, Any]:
        diff = max(abs(a - b) for a, b in zip(cpu, other, strict=True))
        scale = max(1.0, max(abs(a) for a in cpu))
        same_order = [(a > b) == (c > d) for a, b, c, d in zip(cpu[::2], cpu[1::2], other[::2], other[1::2])]
        return {
            "max_abs_diff": diff,
            "max_rel_diff": diff / scale,
            "tolerance": tolerance * scale,
            "within_tolerance": diff <= tolerance * scale,
            "pair_order_agreement": sum(same_order) / len(same_order),
        }

    cpu = timed(RewardModel.load(folder, device="cpu"))
    auto = timed(RewardModel.load(folder, device="auto"))
    result: dict[str, Any] = {
        "model": folder.name,
        "trained_here": trained_here,
        "items": len(items),
        "batch_size": args.score_batch,
        "cpu": cpu,
        "auto": auto,
        "auto_vs_cpu": compare(cpu["scores"], auto["scores"], BF16_TOLERANCE),
    }
    if torch.cuda.is_available():
        gpu_fp32 = RewardModel.load(folder, device="cpu")
        gpu_fp32.model = gpu_fp32.model.to(
            "cuda"
        )  # fp32 on the GPU: the speed bf16 buys, and the reduction order's part
        result["cuda_fp32"] = timed(gpu_fp32)
        result["cuda_fp32_vs_cpu"] = compare(cpu["scores"], result["cuda_fp32"]["scores"], FP32_TOLERANCE)
        result["speedup_auto_over_cpu"] = round(auto["items_per_s"] / cpu["items_per_s"], 2)
    for side in ("cpu", "auto", "cuda_fp32"):
        if side in result:
            result[side]["scores"] = [round(x, 5) for x in result[side]["scores"][:8]]  # a sample, not all
    return {**result, **gpu_memory()}


CHECKS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "policy": build_policy,
    "grpo-fp32": lambda a: check_grpo(a, bf16=False),
    "rm-fp32": lambda a: check_rm(a, bf16=False),
    "rm-scoring": check_rm_scoring,
    "grpo-bf16": lambda a: check_grpo(a, bf16=True),
    "rm-bf16": lambda a: check_rm(a, bf16=True),
    "grpo-remedies": lambda a: check_grpo(a, bf16=False, beta=0.04, entropy_coef=0.05),
}


def steps_so_far(out: Path) -> list[dict[str, Any]]:
    """The step times a GRPO run has written to its steps.jsonl (also those of a run killed at its limit)."""
    from orchrm.grpo import read_steps

    keys = ("step", "generation_s", "reward_s", "update_s", "step_s", "completion_tokens", "tokens_per_s")
    return [{k: round(getattr(t, k), 3) for k in keys} for t in read_steps(out)]


def digests(folder: Path, card: str) -> dict[str, str]:
    """sha256 of every file under `folder` but its card, by path relative to it: what the card must list. Computed
    here, not by orchrm's own check, so a check that agreed with a wrong card would show."""
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and p.relative_to(folder).as_posix() != card]
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def policy_dir(args: argparse.Namespace) -> Path:
    return args.work / "policy"


def elapsed(start: float) -> float:
    return round(time.perf_counter() - start, 2)


def gpu_memory() -> dict[str, Any]:
    """The peak the check allocated on the GPU: the proof it ran there (absent on a CPU)."""
    import torch

    if not torch.cuda.is_available():
        return {}
    return {"cuda_peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}


def run_child(args: argparse.Namespace) -> None:
    """One check in this process; its result (or its error, with the traceback's end) to `work/<name>.json`."""
    start = time.perf_counter()
    try:
        result = {"status": "pass", **CHECKS[args.child](args)}
    except Exception as exc:  # recorded as a failure of this check, with what raised it
        traceback.print_exc()
        result = {
            "status": "fail",
            "error": f"{type(exc).__name__}: {exc}"[:2000],
            "traceback": traceback.format_exc()[-3000:],
        }
    result["child_s"] = elapsed(start)
    (args.work / f"{args.child}.json").write_text(json.dumps(result, indent=2) + "\n")


def device() -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        return {"cuda": False, "processor": platform.processor() or platform.machine()}
    p = torch.cuda.get_device_properties(0)
    smi = (
        subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if shutil.which("nvidia-smi")
        else None
    )
    return {
        "cuda": True,
        "name": p.name,
        "capability": f"{p.major}.{p.minor}",
        "memory_gib": round(p.total_memory / 2**30, 1),
        "cuda_runtime": torch.version.cuda,
        "driver": smi,
    }


def versions() -> dict[str, str | None]:
    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {"python": platform.python_version(), **{name: version(name) for name in PACKAGES}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--config-from", required=True, help="A transformers folder with the policy's config and tokenizer."
    )
    ap.add_argument("--tiny", action="store_true", help="2 layers, hidden 64: a rehearsal on a CPU")
    ap.add_argument("--task", default="mix:world_qa,chain_sum")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--plan-max-tokens", type=int, default=320)
    ap.add_argument("--rm-epochs", type=int, default=1)
    ap.add_argument("--pairs", type=Path, default=PAIRS)
    ap.add_argument("--score-items", type=int, default=256, help="rm-scoring: (question, plan) items scored")
    ap.add_argument("--score-batch", type=int, default=32, help="rm-scoring: items a forward pass")
    ap.add_argument("--checks", default=",".join(CHECKS), help="Comma-separated, from " + ", ".join(CHECKS))
    ap.add_argument("--budget-s", type=float, default=330.0, help="Start no check after this many seconds.")
    ap.add_argument("--work", type=Path, default=Path("/tmp/orchrm-gpu-check"))
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--child", help="Run one check in this process (used by the parent).")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.child:
        run_child(args)
        return
    report: dict[str, Any] = {
        "device": device(),
        "versions": versions(),
        "random_weights": True,
        "settings": {k: str(v) for k, v in vars(args).items() if k not in ("child", "out")},
        "checks": {},
        "stamp": stamp(),
    }
    deadline = time.monotonic() + args.budget_s
    for name in args.checks.split(","):
        left = deadline - time.monotonic()
        if name != "policy" and report["checks"].get("policy", {}).get("status") != "pass":
            report["checks"][name] = {"status": "skipped", "error": "no policy folder"}
        elif left < 30:
            report["checks"][name] = {"status": "skipped", "error": "out of time"}
        else:
            report["checks"][name] = child(name, args, min(LIMITS[name], left))
        print(f"== {name}: {json.dumps(report['checks'][name])[:1500]}", flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")


def child(name: str, args: argparse.Namespace, limit: float) -> dict[str, Any]:
    """Run check `name` in a child process for at most `limit` seconds; its result, or why there is none."""
    (args.work / f"{name}.json").unlink(missing_ok=True)
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--child", name], timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        return {
            "status": "timeout",
            "error": f"killed after {limit:.0f} s",
            "child_s": elapsed(start),
            "steps": steps_so_far(args.work / name),
        }
    result = args.work / f"{name}.json"
    if not result.is_file():
        return {"status": "crashed", "error": f"exit {done.returncode}, no result written", "child_s": elapsed(start)}
    return json.loads(result.read_text())


if __name__ == "__main__":
    main()
