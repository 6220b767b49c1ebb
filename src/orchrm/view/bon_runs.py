"""A best-of-N folder for the viewer: its held-out traces, the per-question rows (method picks and RM
rewards), the judge's picks at the run's N and the results summary.

Each file is read by its owner: `read_traces` and `run_traces` for traces, `read_results` (or, for a results
file older than the model reads, its raw JSON) for the summary, `read_per_question` for the rows,
`read_judgments` for the judge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import safejson
from ..bon.judge import JUDGMENTS_FILE, read_judgments
from ..bon.results import RESULTS_FILE, read_per_question, read_results
from ..bon.run import HELDOUT_DIR
from ..errors import RunFileError
from ..mas.run_folder import run_traces
from ..mas.traces import RUN_FILE, find_traces, read_traces
from .model import Run, display_name, run_setting


def is_bon_run(path: Path) -> bool:
    """An unstamped best-of-N folder: it holds a results file, or at least its held-out traces."""
    return path.is_dir() and bool((path / RESULTS_FILE).exists() or find_traces(path / HELDOUT_DIR))


def load_bon_run(folder: Path) -> Run:
    summary = _bon_summary(folder / RESULTS_FILE)
    per_question = {r["question_id"]: r for r in read_per_question(folder)}
    held = find_traces(folder / HELDOUT_DIR)
    traces = read_traces(held) if held else []
    ids = list(per_question) or list(dict.fromkeys(t.question_id for t in traces))
    n = (
        summary.get("n")
        or run_setting(folder / HELDOUT_DIR / RUN_FILE, "n_plans")
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


def _bon_summary(path: Path) -> dict[str, Any]:
    """The run's N and each method's accuracy and mean tokens by category; read with the typed model, or from
    the raw JSON for a results file older than the model reads."""
    if not path.exists():
        return {}
    try:
        data = read_results(path).dump()
    except RunFileError:
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
