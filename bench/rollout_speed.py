"""Rollout speed, old path against new, in one sitting: the orchestration bench's held-out stage, timed.

    python bench/rollout_speed.py                      # 8 held-out questions x 8 plans, before then after
    python bench/rollout_speed.py --questions 4 --arms after --tag smoke
    python bench/rollout_speed.py --repeat 2           # before, after, before, after (pair r: run seed r)

Both arms run `orchrm.mas.rollout.arollout` with the orchestration bench's held-out settings
(mix:world_qa,chain_sum, N = 8, DAG plans under constrained decoding, temperature 0.9, plan and agent
token limits 320 / 192, self-consistency capped at 3 samples, reflexion and debate at 1 round, 4 questions
in flight) on the embedded Qwen 0.5B, each on a fresh llama-server (4 slots) with no response cache:

- `before`: the path as it was: a request per plan (run.json version 2, seeds hashed per plan) and a
  request per sample everywhere (a self-consistency agent's k samples too).
- `after`: a question's plans in one request (version 3) and k samples of one prompt in one request,
  llama-server's `n_cmpl`: the prompt is processed once and its state copied to the other slots.

Measured per arm: executed plans per minute; prompt tokens the server processed (its own counter,
`/metrics`, cached prompt tokens excluded) per executed plan; decode tokens/s during the rollout against
the same sitting's reference (4 concurrent 128-token completions on unique prompts, as
`bench/llm_throughput.py`); and what best-of-N bills per question: `rm` = every plan sampled + one plan
executed (the mean execution of the question's valid plans: the bench has no RM), `majority` = every plan
sampled and every valid plan executed. Results go to bench/results/rollout_speed.json after every arm,
with the issue's keys `plans_per_minute`, `prompt_tokens_per_plan` ({before, after}, the first pair) and
`decode_vs_reference`, pooled over the (before, after) pairs of the same seed (the last run of each).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from orchrm import RunConfig, Trace, arollout, read_traces
from orchrm.llm import DEFAULT_MODEL, LLM, LocalBackend, ServerConfig
from orchrm.mas import TRACES_FILE
from orchrm.tasks import load_task
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

OUT = Path(__file__).parent / "results" / "rollout_speed.json"
TASK = "mix:world_qa,chain_sum"
VERSIONS = {"before": 2, "after": 3}


class OneRequestPerSample(LocalBackend):
    """The embedded backend as it was before groups: every sample its own request."""

    @property
    def max_group(self) -> int:
        return 1


def counters(llm: LLM) -> dict[str, float]:
    """llama-server's token counters (`/metrics`)."""
    text = httpx.get(llm.backend.server.url.removesuffix("/v1") + "/metrics", timeout=30).text
    return {k: float(v) for k, v in re.findall(r"^llamacpp:(\w+_total) ([\d.e+]+)$", text, re.M)}


async def reference_decode(llm: LLM) -> float:
    """Aggregate decode tok/s at 4 concurrent 128-token completions on unique prompts (no cache)."""
    prompts = [f"[{uuid.uuid4().hex[:12]}] Count from 1 to 300, separated by single spaces." for _ in range(4)]
    start = time.perf_counter()
    outs = await asyncio.gather(
        *(llm.agenerate(p, category="execute", max_tokens=128, use_cache=False) for p in prompts)
    )
    return sum(o[0].usage.completion_tokens for o in outs) / (time.perf_counter() - start)


def prompt_by_agent(traces: list[Trace]) -> dict[str, dict[str, int]]:
    """Where the prompt tokens went: per agent type (and `plan`), billed, from the server's cache, processed."""
    out: dict[str, dict[str, int]] = {}

    def add(kind: str, usage) -> None:  # noqa: ANN001
        row = out.setdefault(kind, {"calls": 0, "prompt": 0, "cached": 0, "processed": 0})
        row["calls"] += 1
        row["prompt"] += usage.prompt_tokens
        row["cached"] += usage.cached_prompt_tokens
        row["processed"] += usage.prompt_tokens - usage.cached_prompt_tokens

    for t in traces:
        if t.plan_call is not None:
            add("plan", t.plan_call.usage)
        for a in t.agents:
            for c in a.calls:
                add(a.type, c.usage)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["processed"]))


def bills(traces: list[Trace]) -> dict[str, float]:
    """Tokens best-of-N bills per question: rm (all plans + one execution) and majority (all executions)."""
    by_q: dict[str, list[Trace]] = {}
    for t in traces:
        by_q.setdefault(t.question_id, []).append(t)
    rm = majority = plan = 0.0
    for plans in by_q.values():
        sampled = sum(t.tokens["plan"].total_tokens for t in plans if "plan" in t.tokens)
        runs = [t.tokens["execute"].total_tokens if "execute" in t.tokens else 0 for t in plans if t.executed]
        plan += sampled
        rm += sampled + (statistics.fmean(runs) if runs else 0.0)
        majority += sampled + sum(runs)
    n = max(len(by_q), 1)
    return {
        "plan_per_question": plan / n,
        "rm_per_question": rm / n,
        "majority_per_question": majority / n,
        "rm_over_majority": rm / majority if majority else None,
    }


async def run_arm(arm: str, questions: int, seed: int, work: Path) -> dict:
    backend_cls = OneRequestPerSample if arm == "before" else LocalBackend
    llm = LLM(backend_cls(DEFAULT_MODEL, server=ServerConfig(parallel=4)))
    try:
        await llm.aping()
        reference = await reference_decode(llm)
        config = RunConfig(
            version=VERSIONS[arm],
            task=TASK,
            split="test",
            n_questions=questions,
            n_plans=8,
            seed=seed,
            degree="dag",
            constrained=True,
            temperature=0.9,
            plan_max_tokens=320,
            agent_max_tokens=192,
            agent_max_samples=3,
            agent_max_rounds=1,
        )
        out = work / f"{arm}.{seed}"
        before = counters(llm)
        start = time.perf_counter()
        await arollout(load_task(TASK), llm, out, config, parallel_questions=4)
        wall = time.perf_counter() - start
        after = counters(llm)
    finally:
        await llm.aclose()
    served = {k: after[k] - before.get(k, 0.0) for k in after}
    traces = read_traces(out / TRACES_FILE)
    executed = sum(t.executed for t in traces)
    decode = served["tokens_predicted_total"] / wall
    ledger = llm.ledger.totals()
    return {
        "arm": arm,
        "questions": questions,
        "seed": seed,
        "plans": len(traces),
        "executed_plans": executed,
        "valid_plans": sum(t.valid for t in traces),
        "correct": sum(bool(t.score and t.score.correct) for t in traces),
        "wall_s": round(wall, 1),
        "plans_per_minute": round(executed / wall * 60, 2),
        "traces_per_minute": round(len(traces) / wall * 60, 2),
        "server_prompt_tokens": served["prompt_tokens_total"],
        "server_cached_prompt_tokens": served["prompt_tokens_cached_total"],
        "server_decoded_tokens": served["tokens_predicted_total"],
        # seconds the server spent processing prompts and generating (slots overlap: may exceed the wall)
        "server_prompt_s": round(served.get("prompt_seconds_total", 0.0), 1),
        "server_decode_s": round(served.get("tokens_predicted_seconds_total", 0.0), 1),
        "prompt_tokens_per_plan": round(served["prompt_tokens_total"] / max(executed, 1), 1),
        "decode_tok_s": round(decode, 2),
        "reference_tok_s": round(reference, 2),
        "decode_vs_reference": round(decode / reference, 3),
        "ledger": {
            k: v.model_dump() | {"processed_prompt_tokens": v.processed_prompt_tokens} for k, v in ledger.items()
        },
        "billing": bills(traces),
        "prompt_by_agent": prompt_by_agent(traces),
    }


def pooled(rs: list[dict]) -> dict[str, float]:
    """Runs pooled: executed plans over summed minutes, server prompt tokens over executed plans, decode ratios
    and best-of-N bills averaged. `decode_ceiling_ppm`: plans per minute if the server processed no prompt at all
    and decoded every token at the sitting's reference rate, the most any prompt reuse could reach."""
    executed, wall = sum(r["executed_plans"] for r in rs), sum(r["wall_s"] for r in rs)
    decode_only_s = sum(r["server_decoded_tokens"] / r["reference_tok_s"] for r in rs)
    rm = sum(r["billing"]["rm_per_question"] for r in rs)
    majority = sum(r["billing"]["majority_per_question"] for r in rs)
    return {
        "runs": len(rs),
        "plans_per_minute": round(executed / wall * 60, 2),
        "prompt_tokens_per_plan": round(sum(r["server_prompt_tokens"] for r in rs) / executed, 1),
        "decode_vs_reference": round(statistics.fmean(r["decode_vs_reference"] for r in rs), 3),
        "rm_over_majority": round(rm / majority, 3),
        "decode_ceiling_ppm": round(executed / decode_only_s * 60, 2),
    }


def summary(runs: list[dict]) -> dict:
    """Each arm against `before` on the seeds both ran (the last run of each (label, seed) counts: a rerun
    replaces a run disturbed by other load); the issue's keys from `after`."""
    last = {(r.get("label", r["arm"]), r["seed"]): r for r in runs}
    labels = sorted({label for label, _ in last} - {"before"})
    out: dict = {"task": TASK, "n": 8, "model": DEFAULT_MODEL, "arms": {}}
    for label in labels:
        seeds = sorted(seed for lab, seed in last if lab == label and ("before", seed) in last)
        if not seeds:
            continue
        b, a = pooled([last[("before", s)] for s in seeds]), pooled([last[(label, s)] for s in seeds])
        ratios = {k: round(a[k] / b[k], 3) for k in ("plans_per_minute", "prompt_tokens_per_plan")}
        out["arms"][label] = {"seeds": seeds, "before": b, label: a, "ratio": ratios}
        if label == "after":
            for key in ("plans_per_minute", "prompt_tokens_per_plan", "decode_vs_reference"):
                out[key] = {"before": b[key], "after": a[key]}
    out["runs"] = runs
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--arms", default="before,after")
    ap.add_argument("--repeat", type=int, default=1, help="pairs of arms; pair r uses run seed r (other questions)")
    ap.add_argument("--seeds", default="", help="run seeds to use instead of 0..repeat-1 (e.g. 1)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--tag", default="", help="write to rollout_speed.<tag>.json instead (a smoke run)")
    ap.add_argument("--label", default="", help="a name for these runs' arms (e.g. after-layout), kept beside the arm")
    ap.add_argument("--append", action="store_true", help="add these runs to the results file's runs")
    ap.add_argument("--tables-only", action="store_true", help="recompute the summary from the committed runs")
    ap.add_argument("--keep", type=Path, default=None, help="keep each arm's run folder here (default: deleted)")
    args = ap.parse_args()
    out = args.out.with_suffix(f".{args.tag}.json") if args.tag else args.out
    if args.tables_only:
        data = json.loads(out.read_text())
        out.write_text(json.dumps({**summary(data["runs"]), "stamp": data.get("stamp")}, indent=2) + "\n")
        print(json.dumps({k: v for k, v in summary(data["runs"]).items() if k != "runs"}, indent=2))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="rollout_speed."))
    runs: list[dict] = json.loads(out.read_text())["runs"] if args.append and out.exists() else []
    try:
        seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else list(range(args.repeat))
        for r in seeds:
            for arm in args.arms.split(","):
                res = asyncio.run(run_arm(arm, args.questions, r, work))
                res["label"] = args.label or arm
                runs.append(res)
                print(json.dumps({k: v for k, v in res.items() if k != "ledger"}), flush=True)
                out.write_text(json.dumps({**summary(runs), "stamp": stamp()}, indent=2) + "\n")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({k: v for k, v in summary(runs).items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
