"""Reward-model benchmark: training and scoring throughput on this CPU, and held-out pairwise accuracy of
the RM against two baselines fitted on the same training pairs:

- length: prefer the longer or the shorter plan, whichever wins more often in training;
- agent-type prior: prefer the plan whose agent-type mix has the higher win rate in training.

    python bench/rm.py --runs bench/results/rm_run [--epochs 4]

Pairs come from real rollouts (`orchrm rollout`); the split is by question. Baselines get half credit for a
tie; the RM gets none. Writes bench/results/rm.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from collections import defaultdict
from pathlib import Path

from orchrm import read_traces
from orchrm.mas import locate_traces
from orchrm.pairs import PairConfig, PairRow, build_pairs
from orchrm.rm import RMConfig, pairwise_accuracy, train_reward_model
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

RESULTS = Path(__file__).parent / "results" / "rm.json"
_AGENT_LINE = re.compile(r"^- \S+ \[(\w+)", re.MULTILINE)


def agent_mix(rendered: str) -> str:
    if rendered.startswith("plan (unparsed)"):
        return "unparsed"
    if rendered.startswith("plan: direct answer"):
        return "direct"
    return "+".join(sorted(_AGENT_LINE.findall(rendered))) or "empty"


def _accuracy(rows: list[PairRow], prefer) -> dict[str, float]:
    """prefer(row) -> +1 (chosen), -1 (rejected), 0 (tie, half credit)."""
    by_source: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        p = prefer(r)
        by_source[r.source].append(1.0 if p > 0 else 0.5 if p == 0 else 0.0)
    every = [x for xs in by_source.values() for x in xs]
    out = {"overall": round(sum(every) / len(every), 4) if every else None}
    out.update({s: round(sum(xs) / len(xs), 4) for s, xs in sorted(by_source.items())})
    return out


def length_baseline(train: list[PairRow]) -> tuple[str, callable]:
    longer_wins = sum(len(r.chosen) > len(r.rejected) for r in train)
    shorter_wins = sum(len(r.chosen) < len(r.rejected) for r in train)
    sign = 1 if longer_wins >= shorter_wins else -1

    def prefer(r: PairRow) -> int:
        diff = len(r.chosen) - len(r.rejected)
        return sign * (diff > 0) - sign * (diff < 0)

    return ("longer" if sign > 0 else "shorter"), prefer


def agent_type_baseline(train: list[PairRow]) -> tuple[dict[str, float], callable]:
    wins: dict[str, int] = defaultdict(int)
    games: dict[str, int] = defaultdict(int)
    for r in train:
        w, lo = agent_mix(r.chosen), agent_mix(r.rejected)
        wins[w] += 1
        games[w] += 1
        games[lo] += 1
    rate = {mix: (wins[mix] + 1) / (games[mix] + 2) for mix in games}  # Laplace: unseen mixes sit at 0.5

    def prefer(r: PairRow) -> int:
        a, b = rate.get(agent_mix(r.chosen), 0.5), rate.get(agent_mix(r.rejected), 0.5)
        return (a > b) - (a < b)

    return rate, prefer


def scoring_throughput(model, rows: list[PairRow], batch_size: int, n: int) -> float:
    items = [(r.prompt, r.chosen) for r in rows] + [(r.prompt, r.rejected) for r in rows]
    items = (items * (n // max(1, len(items)) + 1))[:n]
    model.score_rendered(items[:batch_size], batch_size=batch_size)  # warm-up
    start = time.perf_counter()
    model.score_rendered(items, batch_size=batch_size)
    return round(n / (time.perf_counter() - start), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", type=Path, required=True)
    parser.add_argument("--epochs", type=int, default=RMConfig().epochs)
    parser.add_argument("--val-fraction", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    traces = [t for run in args.runs for t in read_traces(locate_traces(run))]
    pairs = build_pairs(traces, PairConfig(val_fraction=args.val_fraction, seed=args.seed))
    train, val = pairs.train, pairs.val
    print(
        f"{len(traces)} traces -> {len(train)} train / {len(val)} val pairs "
        f"({pairs.stats.train_questions} / {pairs.stats.val_questions} questions)"
    )
    if not train or not val:
        raise SystemExit("not enough pairs: run more rollouts (see the stats above)")

    config = RMConfig(epochs=args.epochs, seed=args.seed)
    result = train_reward_model(train, val, config, pair_stats=pairs.stats.model_dump())
    rm = result.model
    rm_overall, rm_per_source = pairwise_accuracy(rm, val)
    direction, length_prefer = length_baseline(train)
    rates, type_prefer = agent_type_baseline(train)
    accuracy = {
        "rm": {"overall": round(rm_overall, 4), **{k: round(v, 4) for k, v in rm_per_source.items()}},
        f"length ({direction} wins)": _accuracy(val, length_prefer),
        "agent-type prior": _accuracy(val, type_prefer),
    }
    throughput = {
        "train_pairs_per_s": round(result.pairs_per_second, 2),
        "train_seconds": round(result.train_seconds, 1),
        "score_plans_per_s_batch1": scoring_throughput(rm, val, 1, 64),
        "score_plans_per_s_batch64": scoring_throughput(rm, val, 64, 512),
    }
    report = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_average": os.getloadavg()},
        "runs": [str(r) for r in args.runs],
        "pairs": pairs.stats.model_dump(),
        "rm_config": config.model_dump(),
        "epochs": [h.__dict__ for h in result.history],
        "best_epoch": result.best_epoch,
        "heldout_pairwise_accuracy": accuracy,
        "agent_type_win_rates": {k: round(v, 3) for k, v in sorted(rates.items(), key=lambda kv: -kv[1])},
        "throughput": throughput,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**report, "stamp": stamp()}, indent=2) + "\n")
    for name, acc in accuracy.items():
        print(
            f"  {name:28s} held-out accuracy {acc['overall']}  { ({k: v for k, v in acc.items() if k != 'overall'}) }"
        )
    print(
        f"  training {throughput['train_pairs_per_s']} pairs/s; scoring {throughput['score_plans_per_s_batch1']} "
        f"plans/s at batch 1, {throughput['score_plans_per_s_batch64']} at batch 64"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
