"""What the viewer shows, read once from the run folders it was given: rollout runs, best-of-N runs and loop
(training) folders, shaped into the plain JSON the page asks for.

Nothing here touches the filesystem after `load_runs`: the server answers every request from these objects,
by run number, question id and plan index, so no request can name a path. Reading reuses the owners of each
on-disk contract: `read_traces` and `run_traces` for traces, `read_results` (or, for a results file written
before a field existed, its raw JSON) for best-of-N summaries, `read_judgments` for the judge's picks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import jsonl, safejson
from ..bon.judge import JUDGMENTS_FILE, read_judgments
from ..bon.results import PER_QUESTION_FILE, RESULTS_FILE, read_results
from ..bon.run import HELDOUT_DIR
from ..errors import RunFileError
from ..folders import folder_kind
from ..mas.plans import Edge, Plan, plan_shape, topological_order
from ..mas.run_folder import run_traces
from ..mas.traces import RUN_FILE, Trace, find_traces, locate_traces, read_traces
from ..tasks.mix import SEPARATOR as MIX_SEPARATOR

LOOP_FILE = "loop.json"
QUESTION_CLIP = 400
ANSWER_CLIP = 80


@dataclass
class Run:
    """One run as the viewer holds it: its traces by (question, plan), and for best-of-N the per-question rows
    (method picks and RM rewards), the judge's records and the results summary."""

    name: str
    kind: str  # "rollout", "train" (a loop's training rollout), "bon", or "grpo" (a train-orchestrator run)
    traces: dict[tuple[str, int], Trace]
    question_ids: list[str]
    per_question: dict[str, dict[str, Any]] = field(default_factory=dict)
    judgments: dict[str, dict[str, Any]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    samples: dict[tuple[str, int], Any] = field(default_factory=dict)  # a grpo run's sampled plans (training.py)


def load_runs(paths: list[Path]) -> list[Run]:
    """Every run under the given paths: a rollout folder (or its traces.jsonl), a best-of-N folder, a loop
    folder (its `train/` rollout and its `bon/` run) or a `train-orchestrator` folder (its sampled plans). An
    unrecognised path is a `RunFileError`."""
    runs: list[Run] = []
    for path in paths:
        runs.extend(_load(path))
    return runs


def _load(path: Path) -> list[Run]:
    stamped = _load_stamped(path)
    if stamped is not None:
        return stamped
    # Folders written before stamps: told apart by the files they hold.
    if path.is_dir() and (path / LOOP_FILE).exists():
        subs = [p for p in (path / "train", path / "bon") if p.is_dir()]
        return [r for p in subs for r in _load(p)]
    if path.is_dir() and (path / RESULTS_FILE).exists():
        return [_bon_run(path)]
    if path.is_dir() and find_traces(path / HELDOUT_DIR):
        return [_bon_run(path)]
    if path.is_file() or find_traces(path):
        kind = "train" if path.name == "train" else "rollout"
        return [_rollout_run(locate_traces(path), kind)]
    from .training import is_training_run, load_training_run

    if is_training_run(path):
        return [load_training_run(path)]
    raise RunFileError(
        f"{path}: not a run folder", hint="pass a rollout folder, its traces.jsonl, a best-of-N folder or a loop folder"
    )


def _load_stamped(path: Path) -> list[Run] | None:
    kind = folder_kind(path)
    if kind is None:
        return None
    if kind == "loop":
        return [r for p in (path / "train", path / "bon") if p.is_dir() for r in _load(p)]
    if kind == "bon":
        return [_bon_run(path)]
    if kind in ("rollout", "import", "counterfactual"):  # a counterfactual folder holds the edited plans' traces
        return [_rollout_run(locate_traces(path), "train" if path.name == "train" else "rollout")]
    if kind == "train-orchestrator":
        from .training import load_training_run

        return [load_training_run(path)]
    raise RunFileError(f"{path}: a {kind} folder holds no runs to view",
                       hint="pass a rollout folder, its traces.jsonl, a best-of-N folder or a loop folder")  # fmt: skip


def display_name(path: Path) -> str:
    parts = path.resolve().parts
    return "/".join(parts[-3:])


def _rollout_run(traces_file: Path, kind: str) -> Run:
    traces = read_traces(traces_file)
    ids = list(dict.fromkeys(t.question_id for t in traces))
    n = _run_setting(traces_file.parent / RUN_FILE, "n_plans") or (max((t.plan_index for t in traces), default=-1) + 1)
    kept = run_traces(traces, ids, n)
    folder = traces_file.parent
    return Run(name=display_name(folder), kind=kind, traces={t.key: t for t in kept}, question_ids=ids)


def _run_setting(path: Path, key: str) -> int | None:
    """A positive integer setting of run.json, or None: the view reads the traces whatever the file holds."""
    if not path.exists():
        return None
    try:
        value = safejson.read(path).get(key)
    except (OSError, safejson.UnsafeJSONError, AttributeError):
        return None
    return value if type(value) is int and value > 0 else None


def _bon_run(folder: Path) -> Run:
    summary = _bon_summary(folder / RESULTS_FILE)
    rows = jsonl.read(folder / PER_QUESTION_FILE, _row, "per-question row")
    per_question = {r["question_id"]: r for r in rows}
    held = find_traces(folder / HELDOUT_DIR)
    traces = read_traces(held) if held else []
    ids = list(per_question) or list(dict.fromkeys(t.question_id for t in traces))
    n = (
        summary.get("n")
        or _run_setting(folder / HELDOUT_DIR / RUN_FILE, "n_plans")
        or 1 + max((t.plan_index for t in traces), default=-1)
    )
    kept = run_traces(traces, ids, n)
    judgments = {
        j.question_id: {"best": j.best, "scores": j.scores, "status": j.status}
        for j in read_judgments(folder / JUDGMENTS_FILE)
        if j.n == n
    }
    return Run(
        name=display_name(folder),
        kind="bon",
        traces={t.key: t for t in kept},
        question_ids=ids,
        per_question=per_question,
        judgments=judgments,
        summary=summary,
    )


def _row(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("question_id"), str):
        raise jsonl.RecordError("a per-question row needs a question_id")
    return value


def _bon_summary(path: Path) -> dict[str, Any]:
    """The run's N and each method's accuracy and mean tokens by category; read with the typed model, or from
    the raw JSON for a results file written before a field the model now requires."""
    if not path.exists():
        return {}
    try:
        data = read_results(path).dump()
    except ValidationError:
        try:
            data = safejson.read(path)
        except safejson.UnsafeJSONError as exc:
            raise RunFileError(f"{path}: not a results file ({exc})") from None
    methods = {}
    for name, m in (data.get("methods") or {}).items():
        acc = m.get("accuracy") or {}
        methods[name] = {
            "accuracy": acc.get("mean", acc.get("value")),
            "low": acc.get("low"),
            "high": acc.get("high"),
            "tokens": m.get("tokens") or {},
            "executed_plans": m.get("executed_plans"),
        }
    return {"n": data.get("n"), "task": data.get("task"), "model": data.get("model"), "methods": methods}


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
        from .training import training_questions

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


def plan_graph(plan: Plan | None) -> dict[str, Any]:
    """The plan as a layered DAG for drawing: nodes with a level (longest path from a source) and a row within
    it, edges from `${id}` references and explicit edges, and the sink."""
    if plan is None or not plan.agents:
        return {"nodes": [], "edges": [], "sink": None}
    ids = {a.id for a in plan.agents}
    edges = list(
        dict.fromkeys(
            (e.src, e.dst)
            for e in [*plan.edges, *plan.implied_edges()]
            if e.src in ids and e.dst in ids and e.src != e.dst
        )
    )
    graph = plan.model_copy(update={"edges": [Edge(src=s, dst=d) for s, d in edges]})
    order = list(dict.fromkeys(topological_order(graph, cycles="append")))
    level: dict[str, int] = {}
    for node in order:
        ups = [level[s] for s, d in edges if d == node and s in level]
        level[node] = 1 + max(ups) if ups else 0
    rows: dict[int, int] = {}
    types = {a.id: a.type for a in plan.agents}
    nodes = []
    for node in order:
        lv = level[node]
        nodes.append({"id": node, "type": types[node], "level": lv, "row": rows.get(lv, 0)})
        rows[lv] = rows.get(lv, 0) + 1
    sinks = graph.sinks()
    return {"nodes": nodes, "edges": [list(e) for e in edges], "sink": sinks[0] if len(sinks) == 1 else None}


def trace_detail(run: Run, question_id: str, plan_index: int) -> dict[str, Any] | None:
    """One trace in full (every agent's calls and outputs), its DAG, and what the run's methods made of it; for
    a grpo run, one sampled plan with its reward."""
    if run.kind == "grpo":
        from .training import sample_detail

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
