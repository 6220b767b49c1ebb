"""Can the embedded sub-agents carry a decomposed plan? Hand-written plans per question kind, real model.

    python bench/subagents.py                 # 24 held-out questions per probe
    python bench/subagents.py --questions 8
    python bench/subagents.py --probes lookup    # one probe; the others' committed results are kept

Three probes on held-out questions, each plan written from the question's metadata (no orchestrator):
- lookup: one `search` agent given the question (issue #13's mark: >= 80% right);
- bridge: a chain of two `search` agents (hop 1 finds the person's company or city, hop 2 reads it), run
  twice: only the final agent sees the question (`agent_context=final`, the default) and every agent sees it
  (`all`); hop 1's own answer is scored against the bridging entity as well as the final answer;
- chain_sum: one `python` agent against one `cot` agent, both given the question.
Prints accuracy with 95% Wilson intervals and execution tokens per probe; writes bench/results/subagents.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from pathlib import Path

from files import write_text_atomic
from orchrm import OrchrmError
from orchrm.llm import DEFAULT_MODEL, open_llm
from orchrm.mas import AgentSettings, ExecutorConfig, RolloutSettings, execute_plan, parse_and_validate
from orchrm.tasks import load_task, normalize_text
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

OUT = Path(__file__).parent / "results" / "subagents.json"

# Hop 1 asks for the bridging entity; hop 2 asks about it. Keyed by world_qa's bridge templates.
HOPS = {
    "birth_country": ("In which city was {e} born?", "In which country is the city ${hop1}?"),
    "employer_founded": ("Which company does {e} work for?", "In what year was the company ${hop1} founded?"),
    "employer_city": ("Which company does {e} work for?", "In which city is the company ${hop1} headquartered?"),
    "hq_population": ("In which city is {e} headquartered?", "What is the population of ${hop1}?"),
}


def wilson(k: float, n: int, z: float = 1.96) -> list[float]:
    if n == 0:
        return [0.0, 0.0]
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [round((centre - half) / (1 + z * z / n), 3), round((centre + half) / (1 + z * z / n), 3)]


def plan_of(agents: list[dict]) -> object:
    return parse_and_validate(json.dumps({"agents": agents}))


def of_kind(task, kind: str, n: int) -> list:  # noqa: ANN001
    """The first n held-out questions of one kind (fewer when the split runs out)."""
    size, found = n, []
    while len(found) < n:
        try:
            pool = task.questions(size, split="test")
        except OrchrmError:  # a ConfigError: the split holds fewer than `size`; keep what the last size found
            break
        found = [q for q in pool if q.metadata.get("kind") == kind]
        size *= 2
    return found[:n]


async def run_probe(name: str, items: list, llm, task, context: str, max_tokens: int) -> dict:  # noqa: ANN001
    settings = AgentSettings(RolloutSettings(agent_max_tokens=max_tokens, agent_context=context))
    cfg = ExecutorConfig(settings=settings, max_parallel=4)
    sem = asyncio.Semaphore(4)

    async def one(q, plan, bridge):  # noqa: ANN001
        async with sem:
            ex = await execute_plan(plan, q.question, llm, retriever=task.corpus, config=cfg)
        _, ok = task.correct(ex.final_answer, q)
        hop = None
        if bridge is not None:
            first = ex.agents[0].answer or ""
            hop = normalize_text(bridge) in normalize_text(first) if first else False
        tokens = sum(c.usage.total_tokens for e in ex.agents for c in e.calls)  # replayed calls cost the same
        return {"id": q.id, "correct": ok, "hop1": hop, "answer": ex.final_answer, "gold": q.answer, "tokens": tokens}

    rows = await asyncio.gather(*(one(q, p, b) for q, p, b in items))
    n = len(rows)
    k = sum(r["correct"] for r in rows)
    out = {
        "probe": name,
        "context": context,
        "n": n,
        "accuracy": k / n if n else 0.0,
        "interval": wilson(k, n),
        "tokens_per_question": sum(r["tokens"] for r in rows) / max(n, 1),
        "rows": rows,
    }
    hops = [r["hop1"] for r in rows if r["hop1"] is not None]
    if hops:
        out["hop1_accuracy"], out["hop1_interval"] = sum(hops) / len(hops), wilson(sum(hops), len(hops))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=24)
    ap.add_argument("--agent-max-tokens", type=int, default=192)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument(
        "--probes", default="lookup,bridge,chain_sum", help="which probes to run (others' results are kept)"
    )
    args = ap.parse_args()
    world, chain = load_task("world_qa"), load_task("chain_sum")
    n = args.questions
    lookups = [
        (q, plan_of([{"id": "find", "type": "search", "input": q.question}]), None) for q in of_kind(world, "lookup", n)
    ]
    bridges = []
    for q in of_kind(world, "bridge", n):
        first, second = HOPS[q.metadata["template"]]
        plan = plan_of(
            [
                {"id": "hop1", "type": "search", "input": first.format(e=q.metadata["entities"][0])},
                {"id": "hop2", "type": "search", "input": second},
            ]
        )
        bridges.append((q, plan, q.metadata["docs"][1].split(":", 1)[1]))
    sums = chain.questions(n, split="test")
    python = [(q, plan_of([{"id": "calc", "type": "python", "input": q.question}]), None) for q in sums]
    cot = [(q, plan_of([{"id": "solve", "type": "cot", "input": q.question}]), None) for q in sums]
    probes = [
        ("lookup: search", lookups, world, "final"),
        ("bridge: search | search", bridges, world, "final"),
        ("bridge: search | search", bridges, world, "all"),
        ("chain_sum: python", python, chain, "final"),
        ("chain_sum: cot", cot, chain, "final"),
    ]
    wanted = {p.strip() for p in args.probes.split(",")}
    probes = [p for p in probes if p[0].split(":")[0] in wanted]
    # Results of probes not run this time are kept, so probes can be run one sitting at a time.
    kept = json.loads(OUT.read_text())["results"] if OUT.exists() else []
    results = [r for r in kept if r["probe"].split(":")[0] not in wanted]
    with open_llm("local", model=args.model) as llm:
        for name, items, task, ctx in probes:
            r = asyncio.run(run_probe(name, items, llm, task, ctx, args.agent_max_tokens))
            hop = f"  hop 1 {100 * r['hop1_accuracy']:.0f}% {r['hop1_interval']}" if "hop1_accuracy" in r else ""
            print(
                f"{r['probe']:26s} context={r['context']:5s} {100 * r['accuracy']:5.1f}% {r['interval']} "
                f"n={r['n']}  {r['tokens_per_question']:.0f} tok/q{hop}",
                flush=True,
            )
            results.append(r)
            OUT.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(
                OUT,
                json.dumps({"model": args.model, "questions": n, "results": results, "stamp": stamp()}, indent=1)
                + "\n",
            )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
