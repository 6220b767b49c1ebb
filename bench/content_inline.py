"""A second confirmation on the positive control: `content-kind` trained under plan rendering v2 (references
inlined), on questions nobody had sampled a plan for.

    python bench/content_inline.py rollout [--until HH:MM]   # 100 fresh questions x 8 plans (~45 min here)
    python bench/content_inline.py rm --arms inline,plain --seeds 0,1,2   # ~9 min an inline seed, ~2 a plain one
    python bench/content_inline.py tables                     # summaries from the committed rows
    python bench/content_inline.py ensemble   # exploratory: each arm's 3 seeds' mean reward as one RM (~8 min)

The plan, its endpoints and what counts as confirmed are in bench/results/content_inline/PLAN.md, committed
before any plan here was sampled. The training is bench/content_confirm.py's (the first run's training traces less
its `NEW` templates, the same edits and type-contrast pairs); the held-out questions are the first `QUESTIONS` of
the first confirmation's test split that neither the first run nor the first confirmation sampled. Arms:

- `inline`: `content-kind` trained here, its pairs in plan rendering v2 (`${a1=population of X}`; opt-in);
- `plain`: the first confirmation's `content-kind` RMs (rendering v1, under bench/results/content_confirm/rm/,
  made at 7ee8d71 by `python bench/content_confirm.py rm`; not committed), scored on these plans as trained.

Each (arm, RM seed) is a row of bench/results/content_inline/rows.json, appended as it finishes (a rerun skips
rows there); the RMs trained here stay under bench/results/content_inline/rm/ (not committed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import content_confirm as first
from content_confirm import FreshQuestions, _arm_minus
from content_rm import load_run
from files import write_text_atomic
from orchrm import RewardModel, load_task
from orchrm.bon import HYBRID
from orchrm.mas import locate_traces, read_traces
from stamp import stamp

HERE = Path(__file__).parent
OUT = HERE / "results" / "content_inline"
HELDOUT = OUT / "heldout"
ROWS = OUT / "rows.json"
RMS = OUT / "rm"
QUESTIONS = 100
ARMS = ("inline", "plain")


def fresh_task() -> FreshQuestions:
    """The first confirmation's task less every question the first run or the first confirmation sampled."""
    sampled = first.sampled_before() | {t.question_id for t in read_traces(locate_traces(first.HELDOUT))}
    return FreshQuestions(load_task(first.TASK), sampled)


def one(arm: str, seed: int) -> dict[str, Any] | None:
    """Train (`inline`) or load (`plain`) the arm's RM of seed `seed` and measure it on these plans; None when a
    `plain` RM is not on this machine."""
    if arm == "inline":
        folder = RMS / f"inline-{seed}"
        row = first.train("content-kind", seed, folder, render_version=2)
    else:
        folder = first.RMS / f"content-kind-{seed}"
        if not folder.is_dir():
            print(f"{folder} is missing: `python bench/content_confirm.py rm` at 7ee8d71 remakes it", flush=True)
            return None
        row = {"rm_folder": str(folder.relative_to(HERE.parent))}
    rm = RewardModel.load(folder)
    grouped = first.heldout_plans(fresh_task(), HELDOUT, QUESTIONS)
    measured = first.measure(rm, first.training(), load_run(first.FIRST)[0].bon, grouped)
    # `train` names the recipe ("content-kind"); the row is named for this bench's arm
    return (
        row | {"arm": arm, "recipe": "content-kind", "seed": seed, "render_version": rm.card.render_version} | measured
    )


def ensemble() -> dict[str, Any]:
    """Exploratory, added after the numbers (not in PLAN.md): the mean of an arm's three RM seeds' rewards as one
    RM, on this confirmation's questions and (`plain`) the first's, evaluated as `orchrm bon` does. One ensemble:
    its intervals are over questions only, not over which seeds were drawn."""
    sets = {
        "inline@content_inline": ([RMS / f"inline-{s}" for s in range(3)], lambda: (fresh_task(), HELDOUT, QUESTIONS)),
        "plain@content_inline": (
            [first.RMS / f"content-kind-{s}" for s in range(3)],
            lambda: (fresh_task(), HELDOUT, QUESTIONS),
        ),
        "plain@content_confirm": (
            [first.RMS / f"content-kind-{s}" for s in range(3)],
            lambda: (first.fresh_task(), first.HELDOUT, first.QUESTIONS),
        ),
    }
    bon, train, out = load_run(first.FIRST)[0].bon, first.training(), {}
    for name, (folders, where) in sets.items():
        grouped = first.heldout_plans(*where())
        res = first.ensemble_results(folders, train, bon, grouped)
        out[name] = {
            "rm_folders": [str(f.relative_to(HERE.parent)) for f in folders],
            "accuracy": {m: v["accuracy"] for m, v in res["methods"].items()},
            "marks": res["marks"],
            "content": res["content"],
            "stamp": stamp(),
        }
        print(name, {m: round(v["accuracy"]["value"], 3) for m, v in res["methods"].items()}, flush=True)
    write_text_atomic(OUT / "ensemble.json", json.dumps(out, indent=1) + "\n")
    return out


def rows() -> list[dict[str, Any]]:
    return json.loads(ROWS.read_text())["rows"] if ROWS.exists() else []


def summary(all_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """bench/content_confirm.py's summary per arm (its `all` is the primary endpoint's subset: `kind-prior+rm` −
    best content-blind), plus what the RM adds within the prior's shape and `inline` − `plain`."""
    out = first.summary(all_rows)
    for arm in [a for a in out if a in ARMS]:
        runs = [r for r in all_rows if r["arm"] == arm]
        seeds = [r["seed"] for r in runs]
        if len(seeds) >= 2:
            from orchrm.bon import across_runs

            out[arm]["hybrid_minus_kind_prior"] = across_runs(
                [r["columns"][HYBRID] for r in runs],
                [r["columns"]["kind-prior"] for r in runs],
                seeds=seeds,
                seeds_minus=seeds,
                min_pairs=2,
            ).model_dump()
    out["inline_minus_plain"] = {
        column: _arm_minus(all_rows, "inline", "plain", column) for column in ("rm", HYBRID)
    } | {"same_shape_auc_rm": _auc_minus(all_rows)}
    return out


def _auc_minus(all_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """inline − plain in same-shape AUC, per RM seed both arms have (each AUC with its own interval)."""
    by = {(r["arm"], r["seed"]): r["content"]["auc"]["rm"] for r in all_rows}
    return [
        {"seed": s, "inline": by[("inline", s)], "plain": by[("plain", s)]}
        for a, s in sorted(by)
        if a == "inline" and ("plain", s) in by
    ]


def write(all_rows: list[dict[str, Any]]) -> None:
    doc = {"plan": "bench/results/content_inline/PLAN.md", "task": first.TASK, "rows": all_rows}
    write_text_atomic(ROWS, json.dumps(doc | {"summary": summary(all_rows)}, indent=1) + "\n")


def main() -> None:
    first.confirmation_main(
        __doc__, ",".join(ARMS), fresh_task, HELDOUT, QUESTIONS, one, rows, write, summary, {"ensemble": ensemble}
    )


if __name__ == "__main__":
    main()
