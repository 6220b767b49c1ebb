"""The search agent against its recorded baseline, on the same plans of the tts run's search_qa questions.

Baseline: the held-out traces in `bench/results/tts/search_qa/bon/heldout/`, recorded by the search agent as
it was before it skipped documents already found and before a `SEARCH:` line written ahead of a guessed
`Answer:` ran its search. Current: the same plans re-executed (`orchrm.mas.rollout.replay`) with today's
agent, the same model, prompts, budgets and seed. Sub-agents run at temperature 0, so every difference
between the two comes from the agent's policy; calls the two share replay from the response cache.

Per plan: correct; whether the gold answer appeared in a document the agent was shown; searches; searches
that brought no document the agent did not have already; execution tokens. Differences are paired bootstrap
intervals over plans.

    python bench/search_agent.py [--questions 20]

Writes bench/results/search_agent.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import time
from pathlib import Path
from statistics import fmean

from orchrm import RunConfig, Trace, read_traces
from orchrm.bon import Bootstrap
from orchrm.llm import DEFAULT_MODEL, open_llm
from orchrm.mas import RUN_FILE, locate_traces, replay
from orchrm.tasks import load_task
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

HELDOUT = Path(__file__).parent / "results" / "tts" / "search_qa" / "bon" / "heldout"
RESULTS = Path(__file__).parent / "results" / "search_agent.json"


def plan_row(t: Trace) -> dict:
    searches = [a for a in t.agents if a.type == "search"]
    shown = " ".join(m.content for a in searches for c in a.calls for m in c.messages if m.role == "user")
    n_steps = stale = 0
    for a in searches:  # a search "brought nothing" when every hit was already in front of the agent
        seen: set[str] = set()
        for s in a.steps:
            n_steps += 1
            stale += not set(s["hits"]) - seen
            seen.update(s["hits"])
    execute = t.tokens.get("execute")
    return {
        "correct": float(bool(t.score and t.score.correct)),
        "gold_shown": float(bool(t.gold) and t.gold.lower() in shown.lower()),
        "searches": float(n_steps),
        "searches_with_nothing_new": float(stale),
        "execute_tokens": float(execute.total_tokens if execute else 0),
    }


def summary(rows: list[dict]) -> dict:
    return {k: round(fmean(r[k] for r in rows), 4) for k in rows[0]}


async def main_async(args: argparse.Namespace) -> dict:
    config = RunConfig.model_validate_json((HELDOUT / RUN_FILE).read_text())
    recorded = [t for t in read_traces(locate_traces(HELDOUT)) if t.plan is not None and t.executed]
    rank = {q: i for i, q in enumerate(list(dict.fromkeys(t.question_id for t in recorded))[: args.questions])}
    base = sorted((t for t in recorded if t.question_id in rank), key=lambda t: (rank[t.question_id], t.plan_index))
    task = load_task("search_qa")
    llm = open_llm("local", model=args.model)
    if llm.backend.model_id != config.model_id:
        raise SystemExit(f"the recorded run used {config.model_id}, this model is {llm.backend.model_id}")
    sem = asyncio.Semaphore(args.parallel)
    done = 0

    async def one(t: Trace) -> Trace:
        nonlocal done
        async with sem:
            new = await replay(t, task, llm, config)
        done += 1
        print(f"\r{done}/{len(base)} plans", end="", flush=True)
        return new

    start = time.perf_counter()
    try:
        current = await asyncio.gather(*(one(t) for t in base))
    finally:
        await llm.aclose()  # also closes the response cache
    wall = time.perf_counter() - start
    ledger = llm.ledger.totals().get("execute")
    print()
    before, after = [plan_row(t) for t in base], [plan_row(t) for t in current]
    boot = Bootstrap(len(base), args.resamples, seed=0)
    diffs = {k: boot.diff([r[k] for r in after], [r[k] for r in before]).model_dump() for k in before[0]}
    return {
        "benchmark": "search agent (skip found documents, search before a guessed answer) "
        "vs its recorded baseline, same plans",
        "model": config.model_id,
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "questions": len(rank),
        "plans": len(base),
        "baseline": summary(before),
        "current": summary(after),
        "current_minus_baseline": diffs,
        "wall_s": round(wall, 1),
        "execute_ledger": ledger.model_dump() if ledger else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--parallel", type=int, default=8, help="plans executing at once")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    args = ap.parse_args()
    result = asyncio.run(main_async(args))
    RESULTS.write_text(json.dumps({**result, "stamp": stamp()}, indent=2) + "\n")
    print(
        json.dumps(
            {k: result[k] for k in ("plans", "baseline", "current", "current_minus_baseline", "wall_s")}, indent=2
        )
    )
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
