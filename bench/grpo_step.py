"""Time of one GRPO step on the embedded orchestrator, per plan sampler: generation, reward, update.

For each sampler (`server`: llama-server with the current LoRA adapter; `trl`: TRL's own transformers
`generate`), a fresh `train-orchestrator` run of a few steps, 1 question x 8 plans each, on the embedded
0.5B. The times come from the run's own `steps.jsonl` (see src/orchrm/grpo/timing.py); generation
tokens/s counts sampled completion tokens over sampling time (the server's adapter sync excluded, and
reported apart). The reward is plan validity (the parser and validator `train-orchestrator` applies; valid
plans 1.0, rejected ones the penalty), or the RM given with `--rm`. Beside the times, what the plans looked
like (valid share, mean length, share cut at the token limit): both samplers should sample one policy.

    python bench/grpo_step.py [--samplers server trl] [--steps 3] [--group-size 8] [--rm DIR]
                              [--update shared|trl] [--bf16] [--keep]

Writes bench/results/grpo_step.json after every step.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from orchrm.grpo import (
    GRPORunConfig,
    RMScorer,
    Scored,
    latest_attempts,
    open_run,
    policy_weights,
    read_samples,
    read_steps,
    train_orchestrator,
)
from orchrm.llm import run_ledger
from orchrm.tasks import load_task
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

RESULTS = Path(__file__).parent / "results" / "grpo_step.json"
POLICY = "qwen2.5-coder-0.5b"


def save(report: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**report, "stamp": stamp()}, indent=2) + "\n")


class Valid:
    """Every plan that passes the parser and validator scores 1.0 (PlanReward gives the rest the penalty)."""

    name = "valid"

    async def score(self, question: Any, plans: list) -> list[Scored]:
        return [Scored(reward=1.0) for _ in plans]


def summary(out: Path, plan_max_tokens: int) -> dict[str, Any]:
    steps = [s.model_dump(exclude={"attempt"}) for s in read_steps(out)]  # a resume's repeat of a step supersedes
    samples = [s.model_dump() for s in latest_attempts(read_samples(out))]
    ledger = [r.model_dump() for r in run_ledger(out).records]
    plan_lengths = [r["completion_tokens"] for r in ledger if r["category"] == "plan"]

    def mean(key: str, rows: list[dict]) -> float | None:
        return round(statistics.fmean(r[key] for r in rows), 2) if rows else None

    later = steps[1:]  # the first step also pays for start-up (server start, first-call warm-up)
    return {
        "steps": steps,
        "mean_all": {
            k: mean(k, steps) for k in ("step_s", "generation_s", "sync_s", "reward_s", "update_s", "tokens_per_s")
        },
        "mean_after_first": {
            k: mean(k, later) for k in ("step_s", "generation_s", "sync_s", "reward_s", "update_s", "tokens_per_s")
        },
        "plans": len(samples),
        "valid_share": round(sum(s["valid"] for s in samples) / len(samples), 3) if samples else None,
        "mean_completion_tokens": round(statistics.fmean(plan_lengths), 1) if plan_lengths else None,
        "cut_at_limit_share": round(sum(n >= plan_max_tokens for n in plan_lengths) / len(plan_lengths), 3)
        if plan_lengths
        else None,
    }


def trl_update() -> Any:
    """`--update trl`: TRL's own pass over every (prompt + plan), with activation checkpointing as TRL's GRPO has
    by default, through `train_orchestrator`'s public `callbacks`. Once the trainer is built its arguments ask for
    checkpointing: the trainer turns it on when training starts, and orchrm's shared-prompt update, which needs the
    KV cache that checkpointing drops, then hands every batch to TRL's own method (see grpo/shared_prompt.py)."""
    from transformers import TrainerCallback

    class TRLUpdate(TrainerCallback):
        def on_init_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            args.activation_checkpointing = args.gradient_checkpointing = True  # transformers 5's name, and the old
            model.enable_input_require_grads()  # a LoRA model's frozen inputs: what TRL does when built with it on

    return TRLUpdate()


def run_sampler(sampler: str, args: argparse.Namespace, report: dict, scratch: Path) -> None:
    from transformers import TrainerCallback

    task = load_task(args.task)
    weights = policy_weights(POLICY, dtype="bfloat16" if args.bf16 else "float32")
    name = sampler + ("-bf16" if args.bf16 else "") + ("-trlupdate" if args.update == "trl" else "")
    out = scratch / name
    config = GRPORunConfig(
        task=args.task,
        policy=POLICY,
        policy_sha256=weights.sha256,
        reward="rm" if args.rm else "custom",
        group_size=args.group_size,
        questions_per_step=1,
        n_questions=args.steps,
        max_steps=args.steps,
        save_steps=args.steps,
        plan_max_tokens=args.plan_max_tokens,
        seed=args.seed,
        sampler=sampler,
        bf16=args.bf16,
    )
    if args.rm:
        from orchrm.rm import RewardModel

        scorer: Any = RMScorer(RewardModel.load(Path(args.rm)))
    else:
        scorer = Valid()
    entry = report["samplers"].setdefault(name, {"sampler": sampler, "bf16": args.bf16, "update": args.update})

    class Save(TrainerCallback):  # runs after the run's own step timer: steps.jsonl has this step
        def on_step_end(self, a: Any, state: Any, control: Any, **kw: Any) -> None:
            entry.setdefault("load_average_by_step", []).append(
                [round(x, 2) for x in os.getloadavg()]
            )  # the machine is shared
            entry.update(summary(out, args.plan_max_tokens))
            save(report)
            last = entry["steps"][-1]
            print(
                f"{name} step {last['step']}: {last['step_s']:.1f}s = generation {last['generation_s']:.1f}s "
                f"(sync {last['sync_s']:.1f}s, {last['tokens_per_s']:.1f} tok/s) + reward {last['reward_s']:.2f}s "
                f"+ update {last['update_s']:.1f}s",
                flush=True,
            )

    callbacks = [Save(), *([trl_update()] if args.update == "trl" else [])]
    ledger = open_run(out, config)
    start = time.perf_counter()
    try:
        train_orchestrator(config, task, weights, out, ledger=ledger, scorer=scorer, callbacks=callbacks)
    finally:
        ledger.close()
    entry.update(summary(out, args.plan_max_tokens))
    entry["run_wall_s"] = round(time.perf_counter() - start, 1)
    save(report)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samplers", nargs="+", default=["server", "trl"], choices=["server", "trl"])
    ap.add_argument("--task", default="chain_sum")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--plan-max-tokens", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--update",
        choices=["shared", "trl"],
        default="shared",
        help="shared: the group's prompt read once (orchrm's default); "
        "trl: TRL's own pass (results keyed <sampler>-trlupdate)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the rows of bench/results/grpo_step.json already there")
    ap.add_argument(
        "--bf16", action="store_true", help="train in bf16 (AMX on recent Xeons); results keyed <sampler>-bf16"
    )
    ap.add_argument("--rm", help="an RM folder from `orchrm train-rm` to reward with (default: plan validity)")
    args = ap.parse_args()
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average_at_start": list(os.getloadavg()),
        "policy": POLICY,
        "task": args.task,
        "steps": args.steps,
        "questions_per_step": 1,
        "group_size": args.group_size,
        "plan_max_tokens": args.plan_max_tokens,
        "reward": "rm" if args.rm else "plan validity",
        "samplers": {},
    }
    if RESULTS.is_file() and args.keep:
        report["samplers"] = json.loads(RESULTS.read_text()).get("samplers", {})  # add to an earlier run's rows
    save(report)
    with tempfile.TemporaryDirectory(prefix="grpo-step-") as tmp:
        for sampler in args.samplers:
            run_sampler(sampler, args, report, Path(tmp))
    s, t = report["samplers"].get("server"), report["samplers"].get("trl")
    if s and t and s["mean_after_first"]["step_s"] and t["mean_after_first"]["step_s"]:
        report["speedup_after_first"] = {
            "step": round(t["mean_after_first"]["step_s"] / s["mean_after_first"]["step_s"], 2),
            "generation": round(t["mean_after_first"]["generation_s"] / s["mean_after_first"]["generation_s"], 2),
        }
    report["load_average_at_end"] = list(os.getloadavg())
    save(report)
    print(json.dumps({k: v for k, v in report.items() if k != "samplers"}, indent=2))


if __name__ == "__main__":
    main()
