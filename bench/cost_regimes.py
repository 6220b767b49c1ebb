"""Where RM-guided orchestrator training saves tokens: the execution cost per plan at which it saves 5x and 10x.

    python bench/cost_regimes.py --plans 32      # execute 32 of the execute arm's plans at both budgets (resumes)
    python bench/cost_regimes.py --tables-only   # the curve from what is on disk

Issue #24 item 3. A GRPO step samples G plans for one question. Counted as issue #23 defines tokens (a group's
prompt once), a step costs every arm the plan sampling (prompt P once + G plans of p tokens) and the update
reading the same tokens; the `rm` arm adds the RM reading each plan (r tokens a plan for a decoder RM, 0 for
the MiniLM encoder, which is no LLM call), the `execute` arm adds the sub-agents running each sampled plan
(e tokens per sampled plan; an invalid plan costs nothing to run). So per step

    execute / rm = (2(P + G p) + G e) / (2(P + G p) + G r)

and the RM arm saves R times once e >= (R (2(P + G p) + G r) - 2(P + G p)) / G. Its pairs are not free:
collecting them executed every plan of issue #13's training rollouts, and at a larger execution budget those
cost more too. Over a run that samples S*G plans, counting the pairs' collection (n_pair plans, each its
plan tokens plus e), the ratio is bounded by S*G / n_pair whatever e is.

The measurement: the same plans (the execute arm's own training samples, valid ones, evenly spread over its steps) run by
the embedded sub-agents at today's budgets (self-consistency 3 samples, 1 reflexion/debate round, search as
the plan says: 3 steps x top 2 by default) and at MAS-Orchestra's (self-consistency 5 samples, reflexion 5
rounds, debate 3 rounds, search 5 steps x top 5 documents), tokens from each call's usage, no response cache
(wall-clock is real). Results append one line per (plan, regime) to bench/results/cost_regimes/measured.jsonl (two plans of one
step, question and shape are measured once)
and the curve is written to bench/results/cost_regimes.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from pydantic import BaseModel

from orchrm import jsonl
from orchrm.atomic import write_text_atomic
from orchrm.grpo.timing import read_steps
from orchrm.llm import open_llm
from orchrm.mas.agents.base import AgentSettings
from orchrm.mas.executor import ExecutorConfig, execute_plan
from orchrm.mas.plans import Plan, parse_and_validate, plan_shape
from orchrm.mas.rollout import agent_types_for
from orchrm.mas.traces import locate_traces, read_traces
from orchrm.tasks import load_task
from orchrm.tasks.base import Question
from stamp import stamp

HERE = Path(__file__).parent
RUN = HERE / "results" / "train_orchestrator" / "mix_world_qa+chain_sum"
PAIRS_RUN = HERE / "results" / "orchestration" / "mix_world_qa+chain_sum" / "train"  # issue #13's training rollouts
OUT = HERE / "results" / "cost_regimes"
TASK = "mix:world_qa,chain_sum"
# MAS-Orchestra's sub-agent budgets (brief §2.2), as the plan options this executor knows them by.
MAS_ORCHESTRA = {"self_consistency": {"samples": 5}, "reflexion": {"rounds": 5}, "debate": {"rounds": 3},
                 "search": {"steps": 5, "top_k": 5}}  # fmt: skip
REGIMES = {"today": (3, 1), "mas-orchestra": (5, 5)}  # (max samples, max rounds) over what a plan asks
RATIOS = (5, 10)


class Measured(BaseModel):
    """One plan run at one budget: what its sub-agents read and wrote, and how long it took."""

    regime: str
    step: int
    question_id: str
    shape: str
    tokens: int
    calls: int
    wall_s: float
    correct: bool


def at_budget(plan: Plan, regime: str) -> Plan:
    if regime == "today":
        return plan
    agents = [a.model_copy(update={"options": {**a.options, **MAS_ORCHESTRA.get(a.type, {})}}) for a in plan.agents]
    return plan.model_copy(update={"agents": agents})


def execute_samples() -> list[dict]:
    return [json.loads(x) for x in (RUN / "arms" / "execute" / "samples.jsonl").read_text().splitlines()]


def train_questions() -> dict[str, Question]:
    """The GRPO runs' prompt set (the execute arm's run.json: its questions and seed), by id."""
    run = arm_json("execute", "run.json")
    return {q.id: q for q in load_task(TASK).questions(run["n_questions"], split="train", seed=run["seed"])}


def sampled_plans(n: int) -> list[tuple[int, str, str]]:
    """(step, question id, completion) of `n` of the execute arm's valid training samples, evenly spread over
    its steps (what execution cost over the whole run: early steps hold the costlier shapes, late ones python)."""
    valid = [(r["step"], r["question_id"], r["completion"]) for r in execute_samples() if r["valid"]]
    return [valid[i * len(valid) // n] for i in range(min(n, len(valid)))]


async def measure(n: int, agent_max_tokens: int) -> None:
    task = load_task(TASK)
    questions = train_questions()
    path = OUT / "measured.jsonl"
    done = {
        (m.regime, m.step, m.question_id, m.shape)
        for m in jsonl.read(path, Measured.model_validate, "measurements", repair=True)
    }
    llm = open_llm("local", cache=False)
    try:
        for step, qid, text in sampled_plans(n):
            plan = parse_and_validate(text, agent_types=agent_types_for(task))
            for regime, (samples, rounds) in REGIMES.items():
                key = (regime, step, qid, plan_shape(plan))
                if key in done:
                    continue
                cfg = ExecutorConfig(
                    settings=AgentSettings(max_tokens=agent_max_tokens, max_samples=samples, max_rounds=rounds)
                )
                t0 = time.perf_counter()
                ex = await execute_plan(
                    at_budget(plan, regime), questions[qid].question, llm, retriever=task.corpus, config=cfg
                )
                calls = [c for a in ex.agents for c in a.calls]
                _, ok = task.correct(ex.final_answer, questions[qid])
                m = Measured(regime=regime, step=step, question_id=qid, shape=key[3], calls=len(calls), correct=ok,
                             tokens=sum(c.usage.prompt_tokens + c.usage.completion_tokens for c in calls),
                             wall_s=time.perf_counter() - t0)  # fmt: skip
                jsonl.append(path, m)
                done.add(key)
                print(
                    f"{regime:>13} step {step:2d} {key[3]:<28} {m.tokens:6,} tokens {m.wall_s:6.1f} s {'right' if ok else 'wrong'}",
                    flush=True,
                )
    finally:
        await llm.aclose()


def arm_json(arm: str, name: str) -> dict:
    return json.loads((RUN / "arms" / arm / name).read_text())


def step_parts() -> dict:
    """P, p (from an arm counted with a group's prompt once), G, the execute arm's valid share and tokens per
    sampled plan, and the decoder RM's reading per plan (question + plan tokens in the policy's tokenizer, the
    decoder RM's own; the RM's template adds a few tokens more)."""
    from transformers import AutoTokenizer

    from orchrm.grpo import policy_weights
    from orchrm.llm import DEFAULT_MODEL

    run, plan = arm_json("router", "run.json"), arm_json("router", "tokens.json")["categories"]["plan"]
    g, groups = run["group_size"], plan["calls"] // run["group_size"]
    ex = arm_json("execute", "tokens.json")["categories"]["execute"]
    rows = execute_samples()
    questions = {qid: q.question for qid, q in train_questions().items()}
    tok = AutoTokenizer.from_pretrained(policy_weights(DEFAULT_MODEL).path, local_files_only=True)
    decoder = [json.loads(x) for x in (RUN / "arms" / "rm-decoder" / "samples.jsonl").read_text().splitlines()]
    r = statistics.fmean(len(tok(questions[s["question_id"]])["input_ids"]) + s["completion_tokens"] for s in decoder)
    pairs = list(read_traces(locate_traces(PAIRS_RUN)))
    cat = lambda name: sum(t.tokens[name].total_tokens for t in pairs if name in t.tokens)  # noqa: E731
    return {"G": g, "P": plan["prompt_tokens"] / groups, "p": plan["completion_tokens"] / plan["calls"],
            "valid_share": sum(s["valid"] for s in rows) / len(rows), "e_today_ledger": ex["total_tokens"] / len(rows),
            "r": {"minilm": 0.0, "decoder": r}, "pair_plans": len(pairs), "pair_executed": sum(t.valid for t in pairs),
            "pair_tokens": {"plan": cat("plan"), "execute": cat("execute"), "verify": cat("verify")},
            "step_s": {a: statistics.fmean(t.step_s for t in read_steps(RUN / "arms" / a))
                       for a in ("rm", "rm-decoder", "execute")}}  # fmt: skip


def curve(parts: dict, measured: list[Measured]) -> dict:
    g, a0 = parts["G"], 2 * (parts["P"] + parts["G"] * parts["p"])

    def per_step(e: float, r: float) -> float:
        return (a0 + g * e) / (a0 + g * r)

    def break_even(ratio: float, r: float) -> float:
        return (ratio * (a0 + g * r) - a0) / g

    def steps_needed(ratio: float, e: float, r: float, collect: float) -> float | None:
        x, y = a0 + g * e, a0 + g * r  # S x / (S y + collect) >= ratio
        return None if x <= ratio * y else ratio * collect / (x - ratio * y)

    regimes = {}
    for regime in REGIMES:
        ms = [m for m in measured if m.regime == regime]
        if not ms:
            continue
        valid_e = statistics.fmean(m.tokens for m in ms)
        e = valid_e * parts["valid_share"]  # per sampled plan: an invalid one runs nothing
        collect = parts["pair_tokens"]["plan"] + parts["pair_tokens"]["verify"] + parts["pair_executed"] * valid_e
        regimes[regime] = {
            "plans": len(ms), "tokens_per_valid_plan": valid_e, "tokens_per_sampled_plan": e,
            "wall_s_per_plan": statistics.fmean(m.wall_s for m in ms), "correct": sum(m.correct for m in ms),
            "pair_collection_tokens": collect,
            **{f"per_step_ratio_{k}": per_step(e, r) for k, r in parts["r"].items()},
            **{f"run_ratio_16_steps_{k}": 16 * (a0 + g * e) / (16 * (a0 + g * r) + collect) for k, r in parts["r"].items()},
            **{f"steps_for_{x}x_{k}": steps_needed(x, e, r, collect) for x in RATIOS for k, r in parts["r"].items()},
        }  # fmt: skip

    def collect_at(e: float) -> float:  # the pairs' collection when each executed plan costs e / valid share
        return (
            parts["pair_tokens"]["plan"]
            + parts["pair_tokens"]["verify"]
            + parts["pair_executed"] * e / parts["valid_share"]
        )

    grid = [{"e": e, **{f"{k}": per_step(e, r) for k, r in parts["r"].items()},
             **{f"steps_for_{x}x_minilm": steps_needed(x, e, 0.0, collect_at(e)) for x in RATIOS}}
            for e in (100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000)]  # fmt: skip
    return {"parts": parts, "per_step_tokens_without_execution": a0, "regimes": regimes, "grid": grid,
            "break_even": {f"{x}x_{k}": break_even(x, r) for x in RATIOS for k, r in parts["r"].items()}}  # fmt: skip


def markdown(c: dict) -> str:
    p = c["parts"]
    lines = [f"Per GRPO step (1 question x {p['G']} plans, a group's prompt once): prompt {p['P']:.0f}, plan {p['p']:.1f} tokens each, "
             f"sampling + update {c['per_step_tokens_without_execution']:.0f} tokens; decoder RM reads {p['r']['decoder']:.0f} a plan; "
             f"valid plans {p['valid_share']:.0%} of the execute arm's samples.", "",
             "| regime | plans run | tokens / valid plan | / sampled plan | s / plan | right | execute / rm (MiniLM) per step | (decoder RM) | 16 steps with pair collection (MiniLM) | steps for 5x / 10x with pairs (MiniLM) |",
             "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    fmt = lambda s: "never" if s is None else f"{s:,.0f}"  # noqa: E731
    for name, r in c["regimes"].items():
        lines.append(f"| {name} | {r['plans']} | {r['tokens_per_valid_plan']:,.0f} | {r['tokens_per_sampled_plan']:,.0f} | {r['wall_s_per_plan']:.1f} | "
                     f"{r['correct']}/{r['plans']} | {r['per_step_ratio_minilm']:.2f}x | {r['per_step_ratio_decoder']:.2f}x | "
                     f"{r['run_ratio_16_steps_minilm']:.2f}x | {fmt(r['steps_for_5x_minilm'])} / {fmt(r['steps_for_10x_minilm'])} |")  # fmt: skip
    lines += ["", "Execution tokens per sampled plan at which the RM arm's step costs 5x / 10x less: "
              + ", ".join(f"{k} {v:,.0f}" for k, v in c["break_even"].items()), "",
              "| execution tokens / sampled plan | execute / rm per step (MiniLM RM) | (decoder RM) | steps until 5x / 10x counting the pairs' collection (MiniLM) |",
              "|---|---|---|---|"]  # fmt: skip
    lines += [f"| {row['e']:,} | {row['minilm']:.2f}x | {row['decoder']:.2f}x | {fmt(row['steps_for_5x_minilm'])} / {fmt(row['steps_for_10x_minilm'])} |"
              for row in c["grid"]]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--plans", type=int, default=32, help="Valid training plans of the execute arm to run at both budgets."
    )
    ap.add_argument("--agent-max-tokens", type=int, default=192, help="Sub-agent completion limit (the runs' own).")
    ap.add_argument("--tables-only", action="store_true")
    args = ap.parse_args()
    if not args.tables_only:
        asyncio.run(measure(args.plans, args.agent_max_tokens))
    path = OUT / "measured.jsonl"
    measured = jsonl.read(path, Measured.model_validate, "measurements")
    c = curve(step_parts(), measured)
    write_text_atomic(HERE / "results" / "cost_regimes.json", json.dumps({**c, "stamp": stamp()}, indent=2) + "\n")
    print(markdown(c))


if __name__ == "__main__":
    main()
