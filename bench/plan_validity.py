"""How often the embedded orchestrator writes a valid plan, per degree, and which shapes it writes.

    python bench/plan_validity.py                     # 24 questions of mix:world_qa,chain_sum x 4 plans, dag and single
    python bench/plan_validity.py --questions 8 --degrees dag

Samples plans exactly as a rollout does (same prompts, constrained decoding, temperature, seeds) without
executing them, and prints the share of valid plans per degree with a 95% Wilson interval, the rules that
invalid plans broke, and the plan shapes (agent types by topological level) per question kind. Results go to
bench/results/plan_validity.json. Plans replay from the response cache, so a second run takes seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from collections import Counter, defaultdict
from pathlib import Path

from orchrm import RunConfig
from orchrm.llm import DEFAULT_MODEL, open_llm
from orchrm.mas import Orchestrator, agent_types_for, orchestrator_config, plan_shape
from orchrm.tasks import load_task
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

OUT = Path(__file__).parent / "results" / "plan_validity.json"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ((centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n))


async def sample_degree(llm, task, degree: str, args: argparse.Namespace) -> dict:  # noqa: ANN001
    config = RunConfig(
        task=args.task,
        degree=degree,
        constrained=True,
        temperature=args.temperature,
        plan_max_tokens=args.plan_max_tokens,
        seed=args.seed,
    )
    orch = Orchestrator(llm, orchestrator_config(config), agent_types_for(task))
    questions = task.questions(args.questions, split="train", seed=args.seed)
    start = time.perf_counter()
    samples = await asyncio.gather(*(orch.sample(q.question, args.plans) for q in questions))
    rules: Counter[str] = Counter()
    shapes: dict[str, Counter[str]] = defaultdict(Counter)
    valid = 0
    for q, qs in zip(questions, samples, strict=True):
        kind = q.metadata.get("kind") or "all"
        for s in qs:
            valid += s.plan is not None
            if s.error is not None:
                rules[s.error.rule] += 1
            shapes[kind][plan_shape(s.plan) if s.plan is not None else "invalid"] += 1
    total = len(questions) * args.plans
    lo, hi = wilson(valid, total)
    return {
        "degree": degree,
        "plans": total,
        "valid": valid,
        "valid_share": valid / total,
        "interval": [lo, hi],
        "rules": dict(rules.most_common()),
        "shapes_by_kind": {k: dict(c.most_common()) for k, c in shapes.items()},
        "wall_s": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="mix:world_qa,chain_sum")
    ap.add_argument("--questions", type=int, default=24)
    ap.add_argument("--plans", type=int, default=4)
    ap.add_argument("--degrees", default="dag,single")
    ap.add_argument("--temperature", type=float, default=0.9)
    ap.add_argument("--plan-max-tokens", type=int, default=320)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    args = ap.parse_args()
    task = load_task(args.task)
    results = []
    with open_llm("local", model=args.model) as llm:

        async def all_degrees() -> list[dict]:
            return [await sample_degree(llm, task, d, args) for d in args.degrees.split(",")]

        for r in asyncio.run(all_degrees()):
            results.append(r)
            lo, hi = r["interval"]
            print(
                f"{r['degree']:6s} valid {r['valid']}/{r['plans']} = {100 * r['valid_share']:.1f}% "
                f"[{100 * lo:.1f}, {100 * hi:.1f}]  rules {r['rules']}  ({r['wall_s']} s)"
            )
            for kind, shapes in r["shapes_by_kind"].items():
                print(f"    {kind:10s} " + "; ".join(f"{s} x{n}" for s, n in shapes.items()))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "task": args.task,
        "model": args.model,
        "questions": args.questions,
        "plans_per_question": args.plans,
        "temperature": args.temperature,
        "results": results,
    }
    OUT.write_text(json.dumps({**payload, "stamp": stamp()}, indent=2) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
