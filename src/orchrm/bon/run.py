"""`abon`: best-of-N on held-out questions — sample N plans once, execute them, judge them, and compare every
selection method on the same plans.

A bon folder holds `heldout/` (a rollout run on the task's test split: one trace per (question, plan),
appended as it finishes), `judgments.jsonl` (one listwise judgment per (question, N), appended as it
finishes) and the results computed from both: `results.json`, `per_question.jsonl`, the plots and the
reports. An interrupted run resumes from what those files hold; a finished one recomputes its results from
them in seconds, so a larger `--n-questions` extends a run instead of starting over.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .. import jsonl
from ..errors import ConfigError
from ..evidence import SkillEvaluator
from ..evidence.evaluator import EvaluatorConfig
from ..evidence.trajectory import trajectory_response
from ..llm import LLM
from ..mas.rollout import Progress, RunConfig, arollout
from ..mas.traces import TRACES_FILE, Trace, read_traces
from ..rm.model import RewardModel
from ..tasks.base import Task
from ..tasks.scoring import answer_key
from .selection import (
    CATEGORIES,
    METHODS,
    Candidate,
    Case,
    Outcome,
    select_adaptive,
    select_judge,
    select_majority,
    select_oracle,
    select_random,
    select_rm,
)
from .stats import Bootstrap, Interval

HELDOUT_DIR = "heldout"
JUDGMENTS_FILE = "judgments.jsonl"
RESULTS_FILE = "results.json"
PER_QUESTION_FILE = "per_question.jsonl"
CURVE_NS = (1, 2, 4, 8, 16)


class BonConfig(BaseModel):
    """Selection settings (the held-out rollout's own settings live in its `RunConfig`)."""

    n: int = Field(8, ge=1, description="Plans per question.")
    judge: bool = True
    judge_max_steps: int = Field(3, ge=1)
    judge_max_tokens: int = Field(256, ge=16)
    judge_ns: list[int] = Field(default_factory=list, description="N values the judge runs at (default: N only).")
    judge_concurrency: int = Field(2, ge=1, description="Questions judged at once.")
    tau: float = Field(0.5, ge=0, description="rm-adaptive: reward margin, in standard deviations of the rewards.")
    taus: list[float] = Field(default_factory=lambda: [0.0, 0.25, 0.5, 1.0, 2.0], description="rm-adaptive sweep.")
    resamples: int = Field(2000, ge=100)
    seed: int = 0

    def judge_key(self) -> str:
        """Judgments made with other settings are not reused."""
        blob = json.dumps([self.judge_max_steps, self.judge_max_tokens], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:10]

    def judged_ns(self) -> list[int]:
        return sorted({n for n in (self.judge_ns or [self.n]) if 2 <= n <= self.n})


class JudgeRecord(BaseModel):
    """The listwise judge's pick among one question's first `n` plans (the valid, executed ones)."""

    question_id: str
    n: int
    key: str
    best: int | None  # plan index
    scores: dict[str, float | None] = Field(default_factory=dict)  # plan index -> score
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    status: str = "ok"


@dataclass
class BonProgress:
    stage: str = "rollout"
    rollout: Progress | None = None
    judged: int = 0
    to_judge: int = 0


@dataclass
class BonResult:
    results: dict[str, Any]
    cases: list[Case] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_judgments(path: Path) -> list[JudgeRecord]:
    """Every judgment in the file; a torn last line (a killed run) is dropped and cut off."""
    return jsonl.read(path, JudgeRecord.model_validate, "judgment", repair=True)


def rm_warnings(rm: RewardModel, task: Task, spec: str) -> list[str]:
    """What the RM's card says that makes its scores on this task (named `spec` on the command line) suspect."""
    tasks = rm.card.tasks
    if tasks and not {task.name, spec} & set(tasks):
        return [f"the reward model was trained on {', '.join(tasks)}, not {spec}: its scores may not transfer"]
    return []


def group_traces(traces: list[Trace], question_ids: list[str], n: int) -> dict[str, list[Trace]]:
    """The first n plans of each wanted question, in plan-index order (one trace per index)."""
    by_q: dict[str, dict[int, Trace]] = {q: {} for q in question_ids}
    for t in traces:
        if t.question_id in by_q and t.plan_index < n:
            by_q[t.question_id].setdefault(t.plan_index, t)
    return {q: [plans[i] for i in sorted(plans)] for q, plans in by_q.items()}


def _judgeable(plans: list[Trace]) -> list[Trace]:
    return [t for t in plans if t.valid and t.executed]


async def judge_missing(
    evaluator: SkillEvaluator,
    grouped: dict[str, list[Trace]],
    config: BonConfig,
    path: Path,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[JudgeRecord]:
    """Run the listwise judge on every (question, N) that has no judgment yet; append each as it finishes."""
    key = config.judge_key()
    have = {(r.question_id, r.n) for r in read_judgments(path) if r.key == key}
    todo = [
        (q, n) for q, plans in grouped.items() for n in config.judged_ns()
        if (q, n) not in have and len(_judgeable(plans[:n])) >= 2
    ]  # fmt: skip
    done = 0
    if on_progress:
        on_progress(done, len(todo))
    sem = asyncio.Semaphore(config.judge_concurrency)

    async def one(q: str, n: int) -> None:
        nonlocal done
        plans = _judgeable(grouped[q][:n])
        async with sem:
            start = time.perf_counter()
            j = await evaluator.alistwise(plans[0].question, [trajectory_response(t) for t in plans], kind="trajectory")
            wall = time.perf_counter() - start
        record = JudgeRecord(
            question_id=q, n=n, key=key, best=plans[j.best].plan_index if j.best is not None else None,
            scores={str(t.plan_index): s for t, s in zip(plans, j.scores, strict=False)},
            prompt_tokens=j.prompt_tokens, completion_tokens=j.completion_tokens, wall_s=wall, status=j.status,
        )
        jsonl.append(path, record)
        done += 1
        if on_progress:
            on_progress(done, len(todo))

    await asyncio.gather(*(one(q, n) for q, n in todo))
    return [r for r in read_judgments(path) if r.key == key]


def _tokens(t: Trace, category: str) -> int:
    c = t.tokens.get(category)
    return c.total_tokens if c else 0


def build_cases(grouped: dict[str, list[Trace]], rewards: dict[str, list[float]], rm_s: dict[str, float]) -> list[Case]:
    cases = []
    for q, plans in grouped.items():
        cands = [
            Candidate(
                index=t.plan_index, valid=t.valid and t.executed, reward=r, answer_key=answer_key(t.final_answer),
                correct=bool(t.score and t.score.correct), plan_tokens=_tokens(t, "plan"),
                exec_tokens=_tokens(t, "execute"), plan_s=t.plan_call.latency_s if t.plan_call else 0.0, exec_s=t.wall_s,
            )
            for t, r in zip(plans, rewards[q], strict=True)
        ]
        cases.append(Case(q, cands, rm_s=rm_s.get(q, 0.0)))
    return cases


def _with_judge(case: Case, n: int, judgments: dict[tuple[str, int], JudgeRecord]) -> Case:
    sub = case.prefix(n)
    j = judgments.get((case.question_id, n))
    if j is not None:
        sub.judge_best, sub.judge_tokens, sub.judge_s = j.best, j.prompt_tokens + j.completion_tokens, j.wall_s
    return sub


def outcomes_at(cases: list[Case], n: int, config: BonConfig, scale: float, judgments: dict) -> dict[str, list[Outcome]]:
    """Every method's outcome per question when only the first n plans exist."""
    subs = [_with_judge(c, n, judgments) for c in cases]
    out: dict[str, list[Outcome]] = {
        "rm": [select_rm(c) for c in subs],
        "rm-adaptive": [select_adaptive(c, config.tau * scale) for c in subs],
        "random": [select_random(c) for c in subs],
        "majority": [select_majority(c) for c in subs],
        "oracle": [select_oracle(c) for c in subs],
    }
    if config.judge and n in config.judged_ns():
        judged = [c for c in subs if (c.question_id, n) in judgments or len(c.valid) < 2]
        if len(judged) == len(subs):
            out["judge"] = [select_judge(c) for c in subs]
    return out


def summarize(outcomes: list[Outcome], boot: Bootstrap) -> dict[str, Any]:
    tokens = {k: statistics.fmean(o.tokens[k] for o in outcomes) for k in CATEGORIES}
    return {
        "accuracy": boot.mean([o.correct for o in outcomes]).model_dump(),
        "tokens": {**{k: round(v, 1) for k, v in tokens.items()}, "total": round(sum(tokens.values()), 1)},
        "executed_plans": round(statistics.fmean(o.executed for o in outcomes), 3),
        "wall_s": round(statistics.fmean(o.wall_s for o in outcomes), 2),
    }


def full_outcomes(
    cases: list[Case], config: BonConfig, judgments: list[JudgeRecord]
) -> tuple[dict[tuple[str, int], JudgeRecord], float, dict[str, list[Outcome]]]:
    """Every method's outcome per question at N, with the judgment map and the reward scale they used."""
    jmap = {(j.question_id, j.n): j for j in judgments}
    rewards = [c.reward for case in cases for c in case.valid]
    # rm-adaptive's margin threshold is in units of the rewards' spread, so one tau fits every RM
    scale = (statistics.pstdev(rewards) if len(rewards) > 1 else 1.0) or 1.0
    return jmap, scale, outcomes_at(cases, config.n, config, scale, jmap)


def compute_results(
    cases: list[Case], config: BonConfig, judgments: list[JudgeRecord], *, meta: dict[str, Any]
) -> dict[str, Any]:
    """Accuracy with bootstrap intervals, tokens per category, curves over N, the adaptive sweep, the marks."""
    if not cases:
        raise ConfigError("no held-out question has traces yet", hint="let the rollout stage finish at least one question")
    jmap, scale, full = full_outcomes(cases, config, judgments)
    boot = Bootstrap(len(cases), config.resamples, config.seed)
    methods = {m: summarize(full[m], boot) for m in METHODS if m in full}
    acc = {m: [o.correct for o in full[m]] for m in full}
    tok = {m: [o.total_tokens for o in full[m]] for m in full}

    def mark(iv: Interval) -> dict[str, Any]:
        return iv.model_dump()

    marks: dict[str, Any] = {
        "rm_minus_random": mark(boot.diff(acc["rm"], acc["random"])),
        "rm_minus_majority": mark(boot.diff(acc["rm"], acc["majority"])),
        "rm_tokens_over_majority": mark(boot.ratio(tok["rm"], tok["majority"])),
        "gap_closed_random_to_oracle": mark(boot.gap_closed(acc["rm"], acc["random"], acc["oracle"])),
        "rm_adaptive_minus_random": mark(boot.diff(acc["rm-adaptive"], acc["random"])),
    }
    if "judge" in full:
        marks["judge_tokens_over_rm"] = mark(boot.ratio(tok["judge"], tok["rm"]))
        marks["rm_minus_judge"] = mark(boot.diff(acc["rm"], acc["judge"]))

    sweep = []
    for tau in [*config.taus, math.inf]:
        outs = [select_adaptive(_with_judge(c, config.n, jmap), tau * scale) for c in cases]
        s = summarize(outs, boot)
        sweep.append({"tau": None if math.isinf(tau) else tau, **s})

    curves: dict[str, dict[str, Any]] = {}
    for n in sorted({k for k in CURVE_NS if k < config.n} | {config.n}):
        for m, outs in outcomes_at(cases, n, config, scale, jmap).items():
            s = summarize(outs, boot)
            curves.setdefault(m, {})[str(n)] = {"accuracy": s["accuracy"], "tokens": s["tokens"]["total"]}

    valid = [len(c.valid) for c in cases]
    return {
        **meta,
        "n": config.n,
        "questions": len(cases),
        "plans": sum(len(c.candidates) for c in cases),
        "valid_plans_per_question": round(statistics.fmean(valid), 2),
        "questions_without_valid_plan": sum(1 for v in valid if v == 0),
        "reward_std": scale,
        "config": config.model_dump(),
        "methods": methods,
        "marks": marks,
        "adaptive_sweep": sweep,
        "curves": curves,
    }


def per_question_rows(cases: list[Case], config: BonConfig, judgments: list[JudgeRecord]) -> list[dict]:
    _, _, full = full_outcomes(cases, config, judgments)
    rows = []
    for i, case in enumerate(cases):
        row: dict[str, Any] = {"question_id": case.question_id, "valid": len(case.valid)}
        for m, outs in full.items():
            o = outs[i]
            row[m] = {"correct": o.correct, "chosen": o.chosen, "tokens": round(o.total_tokens, 1), "executed": o.executed}
        row["rewards"] = {str(c.index): round(c.reward, 4) for c in case.candidates}
        rows.append(row)
    return rows


def _shown(path: Path | None) -> str:
    """A path as the report shows it: relative to the working directory when inside it."""
    if path is None:
        return ""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


async def abon(
    task: Task,
    llm: LLM,
    rm: RewardModel,
    out: Path,
    run_config: RunConfig,
    config: BonConfig,
    *,
    parallel_questions: int = 2,
    on_progress: Callable[[BonProgress], None] | None = None,
) -> BonResult:
    """Roll out N plans on held-out questions (resuming), judge them, and compute every method's results."""
    if run_config.split != "test":
        raise ConfigError("best-of-N runs on held-out questions: the rollout split must be 'test'")
    if run_config.n_plans != config.n or run_config.execute != "all":
        raise ConfigError("the held-out rollout must sample N plans and execute them all")
    warnings = rm_warnings(rm, task, run_config.task)
    questions = task.questions(run_config.n_questions, split="test", seed=run_config.seed)
    state = BonProgress()
    heldout = out / HELDOUT_DIR

    def rollout_progress(p: Progress) -> None:
        state.rollout = p
        if on_progress:
            on_progress(state)

    await arollout(task, llm, heldout, run_config, parallel_questions=parallel_questions, on_progress=rollout_progress)
    traces = read_traces(heldout / TRACES_FILE)
    grouped = group_traces(traces, [q.id for q in questions], config.n)
    short = {q: len(p) for q, p in grouped.items() if len(p) < config.n}
    if short:
        raise ConfigError(f"{len(short)} held-out questions have fewer than N={config.n} plans in {heldout}")

    rewards: dict[str, list[float]] = {}
    rm_s: dict[str, float] = {}
    for q, plans in grouped.items():
        start = time.perf_counter()
        rewards[q] = rm.score(plans[0].question, [t.plan if t.plan is not None else t.plan_text for t in plans])
        rm_s[q] = time.perf_counter() - start

    judgments: list[JudgeRecord] = []
    if config.judge:
        state.stage = "judge"

        def judge_progress(done: int, total: int) -> None:
            state.judged, state.to_judge = done, total
            if on_progress:
                on_progress(state)

        evaluator = SkillEvaluator(llm, config=EvaluatorConfig(max_steps=config.judge_max_steps, max_tokens=config.judge_max_tokens))
        judgments = await judge_missing(evaluator, grouped, config, out / JUDGMENTS_FILE, judge_progress)

    cases = build_cases(grouped, rewards, rm_s)
    meta = {
        "task": task.name,
        "model": run_config.model_id,
        "rm": {"path": _shown(rm.path), "backbone": rm.card.backbone, "tasks": rm.card.tasks, "weights_sha256": rm.card.weights_sha256},
        "rollout": run_config.model_dump(),
        "warnings": warnings,
    }
    results = compute_results(cases, config, judgments, meta=meta)
    write_atomic(out / RESULTS_FILE, json.dumps(results, indent=2) + "\n")
    rows = per_question_rows(cases, config, judgments)
    write_atomic(out / PER_QUESTION_FILE, "".join(json.dumps(r) + "\n" for r in rows))
    return BonResult(results, cases, warnings)
