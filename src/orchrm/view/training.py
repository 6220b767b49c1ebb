"""A `train-orchestrator` (GRPO) run for the viewer: every sampled plan with its step, validity and reward, by
question, and the run's tokens per category.

The records are read by their owner, `orchrm.samples` (`samples.jsonl`), which the trainer writes through,
and the tokens by theirs, `orchrm.llm.accounting` (`tokens.json`); the training stack itself is never imported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RunFileError
from ..llm.accounting import TOKENS_FILE, read_totals
from ..mas.plans import PlanError, parse_plan, plan_shape
from ..samples import SAMPLES_FILE, SampleRecord, latest_attempts, read_samples
from .graph import plan_graph
from .model import Run, display_name

STEP_ROWS = 12


@dataclass
class Sample:
    step: int
    question_id: str
    completion: str
    valid: bool
    rule: str | None
    reason: str | None
    reward: float | None
    detail: dict[str, Any]
    error: str | None


def is_training_run(path: Path) -> bool:
    return path.is_dir() and (path / SAMPLES_FILE).exists()


def load_training_run(folder: Path) -> Run:
    records = latest_attempts(read_samples(folder))
    samples: dict[tuple[str, int], Sample] = {}
    counts: dict[str, int] = {}
    for r in records:
        i = counts.get(r.question_id, 0)
        counts[r.question_id] = i + 1
        samples[(r.question_id, i)] = Sample(**r.model_dump(include=set(Sample.__dataclass_fields__)))
    run = Run(name=display_name(folder), kind="grpo", traces={}, question_ids=list(counts))
    run.samples = samples
    run.summary = {"steps": _steps(records), "samples": len(records), "tokens": _tokens(folder)}
    return run


def _steps(records: list[SampleRecord]) -> list[dict[str, Any]]:
    """Per step: samples, the share valid, the mean reward of the scored ones; thinned to at most STEP_ROWS rows."""
    by_step: dict[int, list[SampleRecord]] = {}
    for r in records:
        by_step.setdefault(r.step, []).append(r)
    rows = []
    for step, rs in sorted(by_step.items()):
        rewards = [r.reward for r in rs if r.reward is not None]
        rows.append(
            {
                "step": step,
                "samples": len(rs),
                "valid": sum(r.valid for r in rs) / len(rs),
                "mean_reward": sum(rewards) / len(rewards) if rewards else None,
            }
        )
    if len(rows) > STEP_ROWS:
        stride = -(-len(rows) // STEP_ROWS)
        rows = rows[::stride] + ([rows[-1]] if (len(rows) - 1) % stride else [])
    return rows


def _tokens(folder: Path) -> dict[str, int]:
    """Total tokens per category; none for a run that has not written its totals yet, or whose file is damaged."""
    if not (folder / TOKENS_FILE).is_file():
        return {}
    try:
        return {k: row.total_tokens for k, row in read_totals(folder).categories.items()}
    except RunFileError:
        return {}


def _parsed(s: Sample):
    if not s.valid:
        return None
    try:
        return parse_plan(s.completion)
    except PlanError:
        return None


def sample_outcome(s: Sample) -> str:
    if not s.valid:
        return "invalid"
    return "error" if s.error else "scored"


def training_questions(run: Run) -> list[dict[str, Any]]:
    by_q: dict[str, list[tuple[int, Sample]]] = {q: [] for q in run.question_ids}
    for (qid, i), s in run.samples.items():
        by_q[qid].append((i, s))
    out = []
    for qid, samples in by_q.items():
        out.append(
            {
                "id": qid,
                "task": None,
                "kind": None,
                "question": None,
                "gold": None,
                "plans": [
                    {
                        "index": i,
                        "outcome": sample_outcome(s),
                        "answer": None,
                        "tokens": None,
                        "step": s.step,
                        "shape": plan_shape(_parsed(s)),
                        "reward": s.reward,
                    }
                    for i, s in sorted(samples, key=lambda x: x[0])
                ],
                "picks": {},
                "judge": None,
            }
        )
    return out


def sample_detail(run: Run, question_id: str, index: int) -> dict[str, Any] | None:
    s = run.samples.get((question_id, index))
    if s is None:
        return None
    plan = _parsed(s)
    return {
        "sample": {
            "step": s.step,
            "question_id": s.question_id,
            "completion": s.completion,
            "valid": s.valid,
            "rule": s.rule,
            "reason": s.reason,
            "reward": s.reward,
            "detail": s.detail,
            "error": s.error,
            "index": index,
        },
        "outcome": sample_outcome(s),
        "graph": plan_graph(plan),
        "plan": plan.model_dump(mode="json", by_alias=True) if plan else None,
    }
