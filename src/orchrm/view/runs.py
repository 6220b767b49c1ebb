"""What the viewer shows, read once from the run folders it was given: rollout runs, best-of-N runs and loop
(training) folders, shaped into the plain JSON the page asks for.

Nothing here touches the filesystem after `load_runs`: the server answers every request from these objects,
by run number, question id and plan index, so no request can name a path. A folder's kind is its stamp
(`orchrm.folders`), or for one written before stamps, what its files tell; one dispatch loads every kind.
Reading reuses the owners of each on-disk contract: `read_traces` and `run_traces` for traces here, and
`bon_runs` and `training` for best-of-N folders and GRPO samples.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import RunFileError
from ..folders import folder_kind
from ..loop import BON_DIR, LOOP_FILE, TRAIN_DIR
from ..mas.plans import plan_shape
from ..mas.run_folder import run_traces
from ..mas.traces import RUN_FILE, TRACES_FILE, Trace, find_traces, locate_traces, read_traces
from ..tasks.mix import SEPARATOR as MIX_SEPARATOR
from .bon_runs import is_bon_run, load_bon_run
from .graph import plan_graph
from .model import Run, display_name, run_setting
from .training import is_training_run, load_training_run, sample_detail, training_questions

QUESTION_CLIP = 400
ANSWER_CLIP = 80
_HINT = f"pass a rollout folder, its {TRACES_FILE}, a best-of-N folder or a loop folder"
# a counterfactual folder holds the edited plans' traces, an import folder traces converted from elsewhere
_ROLLOUT_KINDS = ("rollout", "import", "counterfactual")


def load_runs(paths: list[Path]) -> list[Run]:
    """Every run under the given paths: a rollout folder (or its traces.jsonl), a best-of-N folder, a loop
    folder (its `train/` rollout and its `bon/` run) or a `train-orchestrator` folder (its sampled plans). An
    unrecognised path is a `RunFileError`."""
    runs: list[Run] = []
    for path in paths:
        runs.extend(_load(path))
    return runs


def _load(path: Path) -> list[Run]:
    kind = _kind(path)
    if kind == "loop":
        return [r for p in (path / TRAIN_DIR, path / BON_DIR) if p.is_dir() for r in _load(p)]
    if kind == "bon":
        return [load_bon_run(path)]
    if kind in _ROLLOUT_KINDS:
        return [_rollout_run(locate_traces(path), "train" if path.name == TRAIN_DIR else "rollout")]
    if kind == "train-orchestrator":
        return [load_training_run(path)]
    raise RunFileError(f"{path}: a {kind} folder holds no runs to view", hint=_HINT)


def _kind(path: Path) -> str:
    """The kind `path` is stamped with; a folder written before stamps is told apart by the files it holds, and
    a path that is neither is a `RunFileError`."""
    kind = folder_kind(path)
    if kind is not None:
        return kind
    if path.is_dir() and (path / LOOP_FILE).exists():
        return "loop"
    if is_bon_run(path):
        return "bon"
    if path.is_file() or find_traces(path):
        return "rollout"
    if is_training_run(path):
        return "train-orchestrator"
    raise RunFileError(f"{path}: not a run folder", hint=_HINT)


def _rollout_run(traces_file: Path, kind: str) -> Run:
    traces = read_traces(traces_file)
    ids = list(dict.fromkeys(t.question_id for t in traces))
    n = run_setting(traces_file.parent / RUN_FILE, "n_plans") or (max((t.plan_index for t in traces), default=-1) + 1)
    kept = run_traces(traces, ids, n)
    folder = traces_file.parent
    return Run(name=display_name(folder), kind=kind, traces={t.key: t for t in kept}, question_ids=ids)


# ---- the JSON the page reads -------------------------------------------------------------------------------


def _clip(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _total_tokens(t: Trace) -> int:
    return sum(c.total_tokens for c in t.tokens.values())


def question_task(t: Trace) -> str:
    """The task a question comes from: a mixed run's member, named by the question id's prefix."""
    if t.task.startswith("mix:"):
        member, sep, _ = t.question_id.partition(MIX_SEPARATOR)
        if sep:
            return member
    return t.task


def _outcome(t: Trace) -> str:
    if not t.valid:
        return "invalid"
    if t.score is None:
        return "unscored"
    if t.score.error:
        return "error"
    return "correct" if t.score.correct else "wrong"


def run_index(runs: list[Run]) -> list[dict[str, Any]]:
    """The run list: name, kind, counts, tokens per category over the run, and best-of-N's method summary."""
    out = []
    for i, r in enumerate(runs):
        tokens: dict[str, int] = dict(r.summary.get("tokens") or {}) if r.kind == "grpo" else {}
        for t in r.traces.values():
            for cat, c in t.tokens.items():
                tokens[cat] = tokens.get(cat, 0) + c.total_tokens
        tasks = sorted({question_task(t) for t in r.traces.values()})
        extra = {r.kind: r.summary} if r.kind in ("bon", "grpo") else {}
        out.append(
            {
                "id": i,
                "name": r.name,
                "kind": r.kind,
                "tasks": tasks,
                "questions": len(r.question_ids),
                "traces": len(r.traces),
                "samples": len(r.samples),
                "tokens": tokens,
                **extra,
            }
        )
    return out


def run_questions(run: Run) -> dict[str, Any]:
    """Every question of a run with one summary per plan (outcome, tokens, reward) and each method's pick."""
    if run.kind == "grpo":
        return {
            "id": run.name,
            "kind": run.kind,
            "methods": [],
            "kinds": [],
            "tasks": [],
            "questions": training_questions(run),
        }
    plans_by_q: dict[str, list[Trace]] = {q: [] for q in run.question_ids}
    for t in run.traces.values():
        plans_by_q.setdefault(t.question_id, []).append(t)
    methods: list[str] = []
    questions = []
    for qid, plans in plans_by_q.items():
        plans.sort(key=lambda t: t.plan_index)
        row = run.per_question.get(qid, {})
        rewards = row.get("rewards") or {}
        picks = {k: v for k, v in row.items() if isinstance(v, dict) and "correct" in v}
        for m in picks:
            if m not in methods:
                methods.append(m)
        first = plans[0] if plans else None
        questions.append(
            {
                "id": qid,
                "task": question_task(first) if first else None,
                "kind": first.question_kind if first else None,
                "question": _clip(first.question, QUESTION_CLIP) if first else None,
                "gold": _clip(first.gold, ANSWER_CLIP) if first else None,
                "plans": [
                    {
                        "index": t.plan_index,
                        "outcome": _outcome(t),
                        "answer": _clip(t.final_answer, ANSWER_CLIP),
                        "tokens": _total_tokens(t),
                        "shape": plan_shape(t.plan),
                        "reward": rewards.get(str(t.plan_index)),
                    }
                    for t in plans
                ],
                "picks": picks,
                "judge": run.judgments.get(qid),
            }
        )
    kinds = sorted({q["kind"] for q in questions if q["kind"]})
    tasks = sorted({q["task"] for q in questions if q["task"]})
    return {
        "id": run.name,
        "kind": run.kind,
        "methods": methods,
        "kinds": kinds,
        "tasks": tasks,
        "questions": questions,
    }


def trace_detail(run: Run, question_id: str, plan_index: int) -> dict[str, Any] | None:
    """One trace in full (every agent's calls and outputs), its DAG, and what the run's methods made of it; for
    a grpo run, one sampled plan with its reward."""
    if run.kind == "grpo":
        return sample_detail(run, question_id, plan_index)
    t = run.traces.get((question_id, plan_index))
    if t is None:
        return None
    row = run.per_question.get(question_id, {})
    picked_by = [m for m, v in row.items() if isinstance(v, dict) and v.get("chosen") == plan_index]
    judge = run.judgments.get(question_id)
    return {
        "trace": t.model_dump(mode="json"),
        "outcome": _outcome(t),
        "graph": plan_graph(t.plan),
        "tokens": {
            k: {
                "prompt": v.prompt_tokens,
                "completion": v.completion_tokens,
                "calls": v.calls,
                "cached_calls": v.cached_calls,
            }
            for k, v in t.tokens.items()
        },
        "reward": (row.get("rewards") or {}).get(str(plan_index)),
        "picked_by": picked_by,
        "judge_score": (judge or {}).get("scores", {}).get(str(plan_index)),
    }
