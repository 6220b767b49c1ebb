"""MAS runtime on the embedded model: cost per agent type, valid-plan share per degree, executor overhead.

  (1) Each agent type alone (a one-agent plan, the question as its input) on a few questions:
      questions/hour (questions run concurrently, as in a rollout), tokens per question, accuracy.
      The `search` agent runs on the search_qa task (it needs a corpus); the others on gsm_symbolic.
  (2) The orchestrator's valid-plan share per degree (direct, single, dag): N plans for a few questions.
  (3) Executor overhead: (wall time - time with an LLM call in flight) / wall time, over all executions.

    python bench/rollout.py [--questions 2] [--plans 2] [--max-tokens 192]

Writes bench/results/rollout.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from pathlib import Path

from orchrm.llm import open_llm
from orchrm.mas import (
    AGENT_TYPES,
    AgentSettings,
    AgentSpec,
    ExecutorConfig,
    Orchestrator,
    OrchestratorConfig,
    Plan,
    RolloutSettings,
    agent_types_for,
    execute_plan,
)
from orchrm.tasks import load_task
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

RESULTS = Path(__file__).parent / "results" / "rollout.json"


def save(report: dict) -> None:
    """Write what is measured so far (the benchmark is slow on a busy CPU; partial results still count)."""
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**report, "stamp": stamp()}, indent=2) + "\n")


async def agent_costs(llm, n_questions: int, max_tokens: int, report: dict) -> tuple[dict, list[tuple[float, float]]]:
    out: dict[str, dict] = report.setdefault("agent_types", {})
    timings: list[tuple[float, float]] = []
    cfg = ExecutorConfig(settings=AgentSettings(RolloutSettings(agent_max_tokens=max_tokens, agent_timeout_s=1800)))
    for agent_type in AGENT_TYPES:
        task = load_task("search_qa" if agent_type == "search" else "gsm_symbolic")
        questions = task.questions(n_questions, split="test", seed=0)
        plan = Plan(agents=[AgentSpec(id="solver", type=agent_type, input="Answer the original question.")])
        if agent_type == "search":
            plan = Plan(agents=[AgentSpec(id="solver", type="search", input=questions[0].question)])
        before = llm.ledger.totals().get("execute")
        start = time.perf_counter()

        async def one(q):
            p = (
                plan
                if agent_type != "search"
                else Plan(agents=[AgentSpec(id="solver", type="search", input=q.question)])
            )
            ex = await execute_plan(p, q.question, llm, retriever=task.corpus, config=cfg)
            return q, ex

        results = await asyncio.gather(*(one(q) for q in questions))
        wall = time.perf_counter() - start
        after = llm.ledger.totals()["execute"]
        tokens = after.total_tokens - (before.total_tokens if before else 0)
        calls = after.calls - (before.calls if before else 0)
        correct = sum(task.correct(ex.final_answer, q)[1] for q, ex in results)
        failed = sum(1 for _, ex in results if ex.final_answer is None)
        timings += [(ex.wall_s, ex.llm_busy_s) for _, ex in results]
        out[agent_type] = {
            "task": task.name,
            "questions": len(questions),
            "wall_s": round(wall, 1),
            "questions_per_hour": round(len(questions) / wall * 3600, 1),
            "tokens_per_question": round(tokens / len(questions)),
            "calls_per_question": round(calls / len(questions), 1),
            "correct": correct,
            "no_answer": failed,
        }
        print(agent_type, out[agent_type], flush=True)
        wall_sum = sum(w for w, _ in timings)
        report["executor_overhead"] = {
            "wall_s": round(wall_sum, 2),
            "llm_busy_s": round(sum(b for _, b in timings), 2),
            "share": round((wall_sum - sum(b for _, b in timings)) / wall_sum, 4) if wall_sum else 0.0,
            "executions": len(timings),
        }
        save(report)
    return out, timings


async def degree_validity(llm, n_questions: int, n_plans: int, max_tokens: int, report: dict) -> dict:
    out: dict[str, dict] = report.setdefault("degrees", {})
    for task_name in ("gsm_symbolic", "search_qa"):
        task = load_task(task_name)
        questions = task.questions(n_questions, split="test", seed=0)
        for degree in ("direct", "single", "dag"):
            orch = Orchestrator(
                llm,
                OrchestratorConfig(RolloutSettings(degree=degree, temperature=0.8, plan_max_tokens=max_tokens)),
                agent_types_for(task),
            )
            start = time.perf_counter()
            samples = [s for q in questions for s in await orch.sample(q.question, n_plans)]
            wall = time.perf_counter() - start
            valid = [s for s in samples if s.plan is not None]
            rules: dict[str, int] = {}
            for s in samples:
                if s.error:
                    rules[s.error.rule] = rules.get(s.error.rule, 0) + 1
            types = sorted({a.type for s in valid for a in s.plan.agents})
            key = f"{task_name}/{degree}"
            out[key] = {
                "plans": len(samples),
                "valid": len(valid),
                "valid_share": round(len(valid) / len(samples), 3),
                "invalid_rules": rules,
                "agent_types_seen": types,
                "wall_s": round(wall, 1),
                "plan_tokens_mean": round(sum(s.call.usage.total_tokens for s in samples if s.call) / len(samples)),
            }
            print(key, out[key], flush=True)
            save(report)
    return out


async def main_async(args: argparse.Namespace) -> dict:
    report: dict = {
        "settings": vars(args),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "note": "Response cache off. Agent-type costs and degree validity were measured concurrently on one "
        "llama-server (4 slots), on a shared 2-core machine where other jobs competed for CPU: wall times and "
        "questions/hour are pessimistic; tokens, validity and overhead shares are not affected.",
    }
    llm = open_llm("local", model=args.model, cache=False, timeout_s=3600.0)
    try:
        report["model"] = llm.backend.model_id
        # Both sections share the server's slots at once (the deadline of a busy 2-core machine); wall times of
        # one therefore include the other's load.
        await asyncio.gather(
            agent_costs(llm, args.questions, args.max_tokens, report),
            degree_validity(llm, args.degree_questions, args.plans, args.plan_max_tokens, report),
        )
        report["ledger"] = {k: v.model_dump() for k, v in llm.ledger.totals().items()}
    finally:
        await llm.aclose()  # inside the event loop: LLM.close() would start a second one
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--plans", type=int, default=2)
    parser.add_argument("--degree-questions", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=192)
    parser.add_argument("--plan-max-tokens", type=int, default=320)
    args = parser.parse_args()
    start = time.perf_counter()
    report = asyncio.run(main_async(args))
    report["total_wall_s"] = round(time.perf_counter() - start, 1)
    save(report)
    print(json.dumps({k: report[k] for k in ("executor_overhead", "total_wall_s")}))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
