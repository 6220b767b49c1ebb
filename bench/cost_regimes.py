"""What RM-guided orchestrator training costs against execution-rewarded training, each number on a named footing.

    python bench/cost_regimes.py --tables-only   # footings and curve from what is on disk (no LLM)
    python bench/cost_regimes.py --plans 32      # first run 32 of the fresh grid's execute plans at both budgets (LLM)

Issue #24 item 3, put on one footing by issue #41 item 4. The arms are the fresh-question grid (stop 36: rm, execute,
router, prior and valid rewards, three training seeds each; `GRID`).

Footings. A token total says which one it is on:
- `training`: the GRPO run's own ledger (its tokens.json: plans sampled, the update reading them, sub-agents running
  them; a group's prompt counted once).
- `pairs as collected`: + the rollouts whose executed plans made the RM's pairs (issue #13's training traces, found
  from the rm arm's RM weights in rm_backbones.json), billed as their traces bill them (every plan its own prompt).
- `pairs as trained`: + the same rollouts billed as the training arms bill (a question's prompt once for its plans).
The collection is charged to every reward fitted on those traces (rm: its pairs; prior and router: fitted on the same
traces, bench/train_orchestrator.py); execute and valid need none. The committed traces hold no usage for their plans
cut off at max_tokens (the orchrm of then dropped a cut-off call's usage; today's orchestrator keeps it): they are
counted at max_tokens completion tokens and their question's prompt, and the traces'-ledger-only figure is kept beside.

The curve. A GRPO step samples G plans for one question; every arm samples them (prompt P once, G plans of p tokens)
and the update reads the same tokens, a0 = 2 (P + G p). The rm arm adds the RM reading each valid plan (r tokens a
sampled plan: 0 for the MiniLM encoder, no LLM call; a decoder RM reads question + plan), the execute arm the
sub-agents (e tokens per sampled plan; an invalid plan runs nothing). So per step

    execute / rm = (a0 + G e) / (a0 + G r),   R times once e >= (R (a0 + G r) - a0) / G.

Counting the pairs: the collection executed n plans at the execute arm's cost per valid plan (e / v, v its valid
share), C(e) = C_plans + n e / v. Over S steps the rm arm spends R times less once

    S >= R C(e) / (a0 + G e - R (a0 + G r)),   which falls, as e grows, to R n / (G v) (from above).

At today's budgets e is the execute arms' own ledger (execution tokens / sampled plans). MAS-Orchestra's budgets
(self-consistency 5 samples, reflexion 5 rounds, debate 3 rounds, search 5 steps x top 5 documents) are measured by
running the fresh grid's own valid plans again at both budgets (`--plans`, no response cache), one line per
(arm, plan, regime) in bench/results/cost_regimes/measured.jsonl; lines of other arms (stop 32 ran 19 plans of the
seed-0 `execute` arm, not on the fresh grid) are kept on disk and not used. Writes bench/results/cost_regimes.json
and bench/results/cost_regimes/summary.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from files import append_jsonl, read_jsonl, write_text_atomic
from orchrm import Plan, read_traces
from orchrm.grpo import read_samples, read_steps, read_training_config
from orchrm.llm import TOKENS_FILE, open_llm, read_totals
from orchrm.mas import (
    AgentSettings,
    ExecutorConfig,
    RolloutSettings,
    agent_types_for,
    execute_plan,
    locate_traces,
    parse_and_validate,
    plan_shape,
)
from orchrm.tasks import Question, load_task
from stamp import stamp

HERE = Path(__file__).parent
RUN = HERE / "results" / "train_orchestrator" / "mix_world_qa+chain_sum"
OUT = HERE / "results" / "cost_regimes"
TASK = "mix:world_qa,chain_sum"
#: The fresh-question grid (bench/README.md, stop 36): three training seeds per reward.
GRID = {
    "rm": ("rm@1", "rm@2", "rm@3"),
    "execute": ("execute@1", "execute@2", "execute@3"),
    "router": ("router", "router@1", "router@2"),
    "prior": ("prior@1", "prior@2", "prior@3"),
    "valid": ("valid", "valid@1", "valid@2"),
}
#: Rewards fitted on the pair-collection traces, so charged for them off the `training` footing.
FITTED_ON_COLLECTION = ("rm", "prior", "router")
Footing = Literal["training", "pairs as collected", "pairs as trained"]
FOOTINGS: dict[str, str] = {
    "training": "the training run's own tokens (plans, the update's reading, sub-agents; a group's prompt once)",
    "pairs as collected": "training + the RM's pair collection as its traces bill it (every plan its own prompt)",
    "pairs as trained": "training + the pair collection billed as the training arms bill (a question's prompt once)",
}
LEDGER_ONLY = ", traces' ledger only"  # the same footing without the cut-off plans the traces did not record
# MAS-Orchestra's sub-agent budgets (brief §2.2), as the plan options this executor knows them by.
MAS_ORCHESTRA = {
    "self_consistency": {"samples": 5},
    "reflexion": {"rounds": 5},
    "debate": {"rounds": 3},
    "search": {"steps": 5, "top_k": 5},
}
REGIMES = {"today": (3, 1), "mas-orchestra": (5, 5)}  # (max samples, max rounds) over what a plan asks
RATIOS = (1, 5, 10)  # 1x: the steps of savings that pay for the pairs
GRID_E = (100, 200, 500, 1000, 1500, 2000, 5000, 10_000, 20_000, 50_000, 1_000_000)


class PairCollection(BaseModel):
    """What the rollouts behind the RM's pairs spent, from their traces."""

    run: str
    plans: int
    questions: int
    executed: int
    plan_prompt: int  # the recorded plans, each its own prompt
    plan_prompt_once: int  # each question's prompt once
    plan_completion: int
    execute: int
    verify: int
    unrecorded_plans: int  # cut off at max_tokens, no usage in the traces
    unrecorded_prompt: int  # their question's prompt, each plan its own
    unrecorded_completion: int  # max_tokens each

    def cost(self, footing: Footing, *, unrecorded: bool = True, execute: float | None = None) -> float:
        """Its tokens on `footing` (0 on `training`); `execute` replaces the recorded execution tokens (the curve)."""
        if footing == "training":
            return 0.0
        prompt = self.plan_prompt_once
        if footing == "pairs as collected":
            prompt = self.plan_prompt + unrecorded * self.unrecorded_prompt
        plans = prompt + self.plan_completion + unrecorded * self.unrecorded_completion
        return plans + self.verify + (self.execute if execute is None else execute)


class ArmTokens(BaseModel):
    """One training arm's run, as its folder records it."""

    arm: str
    reward: str
    seed: int
    group_size: int
    tokens: int  # the run's ledger total: the `training` footing
    plan_prompt: int
    plan_completion: int
    plan_calls: int
    execute: int
    samples: int
    valid: int
    step_s: float  # mean wall-clock of a step


class StepParts(BaseModel):
    """The per-step model's inputs, from the fresh grid's rm and execute arms."""

    G: int
    P: float  # a group's prompt
    p: float  # plan tokens per sample
    a0: float  # 2 (P + G p): sampling and the update's reading
    valid_share: float  # of the execute arms' samples
    e_sampled: float  # execution tokens per sampled plan, today's budgets
    e_valid: float  # per valid (executed) plan
    e_by_arm: dict[str, float]
    r: dict[str, float]  # the RM's reading per sampled plan
    step_s: dict[str, float]  # mean step wall-clock per reward


class Measured(BaseModel):
    """One plan run at one budget: what its sub-agents read and wrote, and how long it took."""

    regime: str
    arm: str = "execute"  # stop 32's lines predate the field: the seed-0 execute arm
    step: int
    question_id: str
    shape: str
    tokens: int
    calls: int
    wall_s: float
    correct: bool


def arm_run(arm: str) -> dict:
    return read_training_config(RUN / "arms" / arm).model_dump()


def arm_totals(arm: str) -> dict:
    return read_totals(RUN / "arms" / arm).model_dump()


def arm_samples(arm: str) -> list[dict]:
    return [r.model_dump() for r in read_samples(RUN / "arms" / arm)]


def arm_tokens(arm: str) -> ArmTokens:
    run, tokens, rows = arm_run(arm), arm_totals(arm), arm_samples(arm)
    cats = tokens["categories"]
    return ArmTokens(
        arm=arm,
        reward=run["reward"],
        seed=run["seed"],
        group_size=run["group_size"],
        tokens=tokens["total"]["total_tokens"],
        plan_prompt=cats["plan"]["prompt_tokens"],
        plan_completion=cats["plan"]["completion_tokens"],
        plan_calls=cats["plan"]["calls"],
        execute=cats.get("execute", {}).get("total_tokens", 0),
        samples=len(rows),
        valid=sum(r["valid"] for r in rows),
        step_s=statistics.fmean(t.step_s for t in read_steps(RUN / "arms" / arm)),
    )


def pairs_run(arm: str) -> Path:
    """The run whose traces made the arm's RM's pairs: rm_backbones.json names it beside the arm's RM weights."""
    sha = arm_run(arm)["rm_sha256"]
    bench = json.loads((HERE / "results" / "rm_backbones.json").read_text())
    if not any(b["weights_sha256"] == sha for b in bench["backbones"].values()):
        raise LookupError(f"{arm}'s RM ({sha[:12]}) is not in rm_backbones.json: its pairs' run is unknown")
    return HERE.parent / bench["run"][bench["run"].index("bench/") :]


def pair_collection(run: Path) -> PairCollection:
    traces = list(read_traces(locate_traces(run / "train")))
    recorded, missing = [t for t in traces if "plan" in t.tokens], [t for t in traces if "plan" not in t.tokens]
    prompt_of = {t.question_id: t.tokens["plan"].prompt_tokens for t in recorded}
    odd = [t.key for t in missing if t.question_id not in prompt_of or "cut off" not in str(t.plan_error)]
    if odd:
        raise ValueError(f"plans with no usage that were not cut off at max_tokens, cost unknown: {odd[:5]}")

    def total(name: str) -> int:
        return sum(t.tokens[name].total_tokens for t in traces if name in t.tokens)

    prompts = [prompt_of[t.question_id] for t in recorded]
    return PairCollection(
        run=str(run.relative_to(HERE.parent)),
        plans=len(traces),
        questions=len(prompt_of),
        executed=sum(t.executed for t in traces),
        plan_prompt=sum(prompts),
        plan_prompt_once=sum(prompt_of.values()),
        plan_completion=sum(t.tokens["plan"].completion_tokens for t in recorded),
        execute=total("execute"),
        verify=total("verify"),
        unrecorded_plans=len(missing),
        unrecorded_prompt=sum(prompt_of[t.question_id] for t in missing),
        unrecorded_completion=sum(t.orchestrator.max_tokens for t in missing),
    )


def footing_total(arm: ArmTokens, footing: Footing, collection: PairCollection, *, unrecorded: bool = True) -> float:
    """An arm's tokens on `footing`: its run's own, plus the pair collection where its reward was fitted on it."""
    return arm.tokens + (collection.cost(footing, unrecorded=unrecorded) if arm.reward in FITTED_ON_COLLECTION else 0)


def footings(arms: dict[str, ArmTokens], collection: PairCollection) -> dict[str, dict]:
    """Per footing: each arm's total, each reward's mean over its seeds, and execute / each reward."""
    out = {}
    for footing in FOOTINGS:
        for unrecorded in (True, False) if footing != "training" else (True,):
            per_arm = {a: footing_total(t, footing, collection, unrecorded=unrecorded) for a, t in arms.items()}
            mean = {k: statistics.fmean(per_arm[a] for a in names) for k, names in GRID.items()}
            missing = f", without the {collection.unrecorded_plans} cut-off plans the traces did not record"
            out[footing + ("" if unrecorded else LEDGER_ONLY)] = {
                "counts": FOOTINGS[footing] + ("" if unrecorded else missing),
                "arms": per_arm,
                "mean": mean,
                "execute_over": {k: mean["execute"] / v for k, v in mean.items()},
            }
    return out


def train_questions(arm: str) -> dict[str, Question]:
    """An arm's prompt set (its run.json: questions and seed), by id."""
    run = arm_run(arm)
    return {q.id: q for q in load_task(TASK).questions(run["n_questions"], split="train", seed=run["seed"])}


def decoder_reading(arms: tuple[str, ...]) -> float:
    """What a decoder RM would read per sampled plan of the rm arms: question + plan tokens of each valid plan, in
    the policy's tokenizer (the decoder RM's own; its template adds a few more)."""
    from transformers import AutoTokenizer

    from orchrm.grpo import policy_weights
    from orchrm.llm import DEFAULT_MODEL

    tok = AutoTokenizer.from_pretrained(policy_weights(DEFAULT_MODEL).path, local_files_only=True)
    read, samples = 0, 0
    for arm in arms:
        questions, rows = train_questions(arm), arm_samples(arm)
        read += sum(
            len(tok(questions[s["question_id"]].question)["input_ids"]) + s["completion_tokens"]
            for s in rows
            if s["valid"]
        )
        samples += len(rows)
    return read / samples


def step_parts(arms: dict[str, ArmTokens], r_decoder: float) -> StepParts:
    pair = [arms[a] for a in GRID["rm"] + GRID["execute"]]
    ex = [arms[a] for a in GRID["execute"]]
    g = pair[0].group_size
    prompt = sum(a.plan_prompt for a in pair) / sum(a.plan_calls / g for a in pair)
    plan = sum(a.plan_completion for a in pair) / sum(a.plan_calls for a in pair)
    return StepParts(
        G=g,
        P=prompt,
        p=plan,
        a0=2 * (prompt + g * plan),
        valid_share=sum(a.valid for a in ex) / sum(a.samples for a in ex),
        e_sampled=sum(a.execute for a in ex) / sum(a.samples for a in ex),
        e_valid=sum(a.execute for a in ex) / sum(a.valid for a in ex),
        e_by_arm={a.arm: a.execute / a.samples for a in ex},
        r={"minilm": 0.0, "decoder": r_decoder},
        step_s={k: statistics.fmean(arms[a].step_s for a in GRID[k]) for k in GRID},
    )


def steps_for(ratio: float, e: float, r: float, collect: float, parts: StepParts) -> float | None:
    """Steps S with S x >= ratio (S y + collect), x and y the execute and rm arms' step; None: never."""
    x, y = parts.a0 + parts.G * e, parts.a0 + parts.G * r
    return None if x <= ratio * y else ratio * collect / (x - ratio * y)


def with_pairs(parts: StepParts, collection: PairCollection, e: float, *, recorded: bool) -> dict:
    """Steps until each ratio, counting the pairs on both footings (MiniLM RM): the collection's execution as
    recorded, or scaled to e (its executed plans at the execute arm's cost per valid plan)."""
    execute = None if recorded else collection.executed * e / parts.valid_share
    return {
        footing: {f"{x}x": steps_for(x, e, 0.0, collection.cost(footing, execute=execute), parts) for x in RATIOS}
        for footing in ("pairs as collected", "pairs as trained")
    }


def regimes(parts: StepParts, measured: list[Measured]) -> tuple[dict, dict]:
    """Execution tokens per sampled plan at each budget from the fresh grid, and the budgets it cannot give."""
    out = {"today": {"source": "the execute arms' ledgers", "e_sampled": parts.e_sampled, "e_valid": parts.e_valid}}
    dropped = {}
    fresh = [m for m in measured if m.arm in GRID["execute"]]
    for regime in REGIMES:
        ms = [m for m in fresh if m.regime == regime]
        if regime != "today" and not ms:
            stale = [m.tokens for m in measured if m.regime == regime]
            dropped[regime] = (
                f"not re-derived: no plan of the fresh grid has been run at these budgets (`--plans N`, "
                f"an LLM run); the old figure ({len(stale)} plans of the seed-0 `execute` arm, "
                f"{statistics.fmean(stale) if stale else 0:,.0f} a valid plan) is not used"
            )
            continue
        if ms:
            valid_e = statistics.fmean(m.tokens for m in ms)
            out.setdefault(regime, {"source": f"{len(ms)} fresh plans run again"})
            out[regime] |= {
                "rerun_plans": len(ms),
                "rerun_e_valid": valid_e,
                "rerun_correct": sum(m.correct for m in ms),
                "rerun_wall_s": statistics.fmean(m.wall_s for m in ms),
            }
            if regime != "today":
                out[regime] |= {"e_valid": valid_e, "e_sampled": valid_e * parts.valid_share}
    return out, dropped


def off_grid_execution() -> dict[str, float]:
    """Execution tokens per sampled plan of the arms off the fresh grid that ran their plans (earlier sittings)."""
    out = {}
    for folder in sorted((RUN / "arms").iterdir()):
        path = folder / TOKENS_FILE
        if folder.name not in GRID["execute"] and path.exists():
            ex = arm_totals(folder.name)["categories"].get("execute")
            if ex:
                out[folder.name] = ex["total_tokens"] / len(arm_samples(folder.name))
    return out


def curve(parts: StepParts, collection: PairCollection, measured: list[Measured]) -> dict:
    g, a0 = parts.G, parts.a0

    def per_step(e: float) -> dict[str, float]:
        return {k: (a0 + g * e) / (a0 + g * r) for k, r in parts.r.items()}

    points, dropped = regimes(parts, measured)
    for name, pt in points.items():
        pt |= {
            "per_step": per_step(pt["e_sampled"]),
            "steps_with_pairs": with_pairs(parts, collection, pt["e_sampled"], recorded=name == "today"),
        }
    grid = [
        {"e": e, "per_step": per_step(e), "steps_with_pairs": with_pairs(parts, collection, e, recorded=False)}
        for e in GRID_E
    ]
    return {
        "points": points,
        "dropped": dropped,
        "off_grid": off_grid_execution(),
        "grid": grid,
        "break_even_e": {f"{x}x": {k: (x * (a0 + g * r) - a0) / g for k, r in parts.r.items()} for x in RATIOS[1:]},
        "steps_limit": {f"{x}x": x * collection.executed / (g * parts.valid_share) for x in RATIOS},
    }


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|---" * len(head) + "|", *("| " + " | ".join(r) + " |" for r in rows)]


def markdown(f: dict, parts: StepParts, col: PairCollection, c: dict) -> str:
    n = lambda s: "never" if s is None else f"{s:,.0f}"  # noqa: E731
    kinds = [k for k in GRID if k != "execute"]
    per_step = [(f"{pt['e_sampled']:,.0f} ({name})", pt) for name, pt in c["points"].items()]
    per_step += [(f"{row['e']:,}", row) for row in c["grid"]]
    by_seed = ", ".join(f"{v:.0f}" for v in parts.e_by_arm.values())
    return "\n".join(
        [
            f"Pair collection ({col.run}): {col.plans} plans on {col.questions} questions, {col.executed} executed; "
            f"plans {col.plan_prompt:,} prompt (each its own; {col.plan_prompt_once:,} a question's once) + "
            f"{col.plan_completion:,} completion, execution {col.execute:,}, verify {col.verify:,}; not in the traces: "
            f"{col.unrecorded_plans} plans cut off at max_tokens ({col.unrecorded_prompt:,} prompt + "
            f"{col.unrecorded_completion:,} completion).",
            "",
            *table(
                ["footing (mean of 3 seeds)", *GRID, *(f"execute / {k}" for k in kinds)],
                [
                    [
                        name,
                        *(f"{row['mean'][k]:,.0f}" for k in GRID),
                        *(f"{row['execute_over'][k]:.2f}x" for k in kinds),
                    ]
                    for name, row in f.items()
                ],
            ),
            "",
            "; ".join(f"**{k}**: {v}" for k, v in FOOTINGS.items())
            + f"; *{LEDGER_ONLY[2:]}*: without the {col.unrecorded_plans} plans the traces did not record.",
            "",
            *table(
                ["arm", *f], [[a, *(f"{row['arms'][a]:,.0f}" for row in f.values())] for a in f["training"]["arms"]]
            ),
            "",
            f"Per GRPO step (1 question x {parts.G} plans, a group's prompt once): prompt {parts.P:.0f}, plan "
            f"{parts.p:.1f} tokens each, sampling + update {parts.a0:,.0f}; execution {parts.e_sampled:.0f} tokens a "
            f"sampled plan at today's budgets ({parts.e_valid:.0f} a valid one, valid {parts.valid_share:.1%}; by seed "
            f"{by_seed}); a decoder RM would read {parts.r['decoder']:.0f} a plan. Step wall-clock: "
            + ", ".join(f"{k} {v:.1f} s" for k, v in parts.step_s.items())
            + f" (execute / rm {parts.step_s['execute'] / parts.step_s['rm']:.2f}x).",
            "",
            *table(
                [
                    "execution tokens / sampled plan",
                    "execute / rm per step (MiniLM)",
                    "(decoder)",
                    "steps until 1x / 5x / 10x, pairs as collected",
                    "pairs as trained",
                ],
                [
                    [
                        label,
                        f"{row['per_step']['minilm']:.2f}x",
                        f"{row['per_step']['decoder']:.2f}x",
                        *(" / ".join(n(s[f"{x}x"]) for x in RATIOS) for s in row["steps_with_pairs"].values()),
                    ]
                    for label, row in per_step
                ],
            ),
            "",
            "Execution tokens per sampled plan for the rm arm's step to cost R times less: "
            + "; ".join(
                f"{x} " + ", ".join(f"{k} {v:,.0f}" for k, v in d.items()) for x, d in c["break_even_e"].items()
            ),
            "Steps until 1x / 5x / 10x as execution cost grows (pairs counted, either footing): "
            + " / ".join(f"{v:,.1f}" for v in c["steps_limit"].values())
            + f" (R x {col.executed} executed pair plans / ({parts.G} x {parts.valid_share:.3f} executed a step)).",
            *(f"Dropped, {k}: {v}." for k, v in c["dropped"].items()),
            "Execution tokens on the fresh grid come from the execute arms alone (no other reward runs a plan); "
            "off the grid, not used: "
            + ", ".join(f"`{a}` {e:,.0f} a sampled plan" for a, e in c["off_grid"].items())
            + ".",
            "",
        ]
    )


def sampled_plans(n: int) -> list[tuple[str, int, str, str]]:
    """(arm, step, question id, completion) of `n` of the fresh execute arms' valid samples, evenly spread over
    their seeds and steps (early steps hold the costlier shapes, late ones python)."""
    valid = [
        (a, r["step"], r["question_id"], r["completion"]) for a in GRID["execute"] for r in arm_samples(a) if r["valid"]
    ]
    return [valid[i * len(valid) // n] for i in range(min(n, len(valid)))]


async def measure(n: int, agent_max_tokens: int) -> None:
    task, path = load_task(TASK), OUT / "measured.jsonl"
    questions = {a: train_questions(a) for a in GRID["execute"]}
    done = {
        (m.regime, m.arm, m.step, m.question_id, m.shape)
        for m in read_jsonl(path, Measured.model_validate, repair=True)
    }
    llm = open_llm("local", cache=False)
    try:
        for arm, step, qid, text in sampled_plans(n):
            plan = parse_and_validate(text, agent_types=agent_types_for(task))
            for regime, (samples, rounds) in REGIMES.items():
                key = (regime, arm, step, qid, plan_shape(plan))
                if key in done:
                    continue
                settings = AgentSettings(
                    RolloutSettings(
                        agent_max_tokens=agent_max_tokens, agent_max_samples=samples, agent_max_rounds=rounds
                    )
                )
                t0 = time.perf_counter()
                ex = await execute_plan(
                    at_budget(plan, regime),
                    questions[arm][qid].question,
                    llm,
                    retriever=task.corpus,
                    config=ExecutorConfig(settings=settings),
                )
                calls = [c for a in ex.agents for c in a.calls]
                _, ok = task.correct(ex.final_answer, questions[arm][qid])
                m = Measured(
                    regime=regime,
                    arm=arm,
                    step=step,
                    question_id=qid,
                    shape=key[4],
                    calls=len(calls),
                    correct=ok,
                    tokens=sum(c.usage.prompt_tokens + c.usage.completion_tokens for c in calls),
                    wall_s=time.perf_counter() - t0,
                )
                append_jsonl(path, m)
                done.add(key)
                print(
                    f"{regime:>13} {arm} step {step:2d} {key[4]:<28} {m.tokens:6,} tokens {m.wall_s:6.1f} s", flush=True
                )
    finally:
        await llm.aclose()


def at_budget(plan: Plan, regime: str) -> Plan:
    if regime == "today":
        return plan
    agents = [a.model_copy(update={"options": {**a.options, **MAS_ORCHESTRA.get(a.type, {})}}) for a in plan.agents]
    return plan.model_copy(update={"agents": agents})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plans", type=int, default=32, help="Valid fresh-grid plans to run at both budgets (LLM).")
    ap.add_argument("--agent-max-tokens", type=int, default=192, help="Sub-agent completion limit (the runs' own).")
    ap.add_argument("--tables-only", action="store_true", help="No LLM: footings and curve from what is on disk.")
    args = ap.parse_args()
    if not args.tables_only:
        asyncio.run(measure(args.plans, args.agent_max_tokens))
    arms = {a: arm_tokens(a) for names in GRID.values() for a in names}
    runs = {pairs_run(a) for a in GRID["rm"]}
    if len(runs) != 1:
        raise ValueError(f"the rm arms' RMs come from different pair runs: {sorted(map(str, runs))}")
    collection = pair_collection(runs.pop())
    parts = step_parts(arms, decoder_reading(GRID["rm"]))
    measured = read_jsonl(OUT / "measured.jsonl", Measured.model_validate)
    f, c = footings(arms, collection), curve(parts, collection, measured)
    result = {
        "footings": f,
        "collection": collection.model_dump(),
        "arms": {a: t.model_dump() for a, t in arms.items()},
        "parts": parts.model_dump(),
        **c,
        "stamp": stamp(),
    }
    write_text_atomic(HERE / "results" / "cost_regimes.json", json.dumps(result, indent=2) + "\n")
    text = markdown(f, parts, collection, c)
    write_text_atomic(OUT / "summary.md", text)
    print(text)


if __name__ == "__main__":
    main()
