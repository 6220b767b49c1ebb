"""A third confirmation on the positive control: the mean reward of three `content-kind` RMs, on questions nobody
had sampled a plan for.

    python bench/content_ensemble.py rollout [--until HH:MM]   # 100 fresh questions x 8 plans (~45 min here)
    python bench/content_ensemble.py rm --seeds 3,4,5           # train and measure each seed (~9 min a seed)
    python bench/content_ensemble.py ensemble                   # the endpoints: both ensembles (~3 min)
    python bench/content_ensemble.py tables                     # summaries from the committed rows

The plan, its endpoints and what counts as confirmed are in bench/results/content_ensemble/PLAN.md, committed
before any plan here was sampled and any RM of seeds 3-5 trained. The training is bench/content_confirm.py's,
rendering v1 (the default). The held-out questions are the first `QUESTIONS` of the first confirmation's test
split that none of the first run, the first confirmation or the second sampled. Ensembles (`ENSEMBLES`):

- `E2`: `content-kind` RM seeds 3, 4, 5, trained here (under bench/results/content_ensemble/rm/, not committed);
- `E1`: the first confirmation's `content-kind` RM seeds 0, 1, 2 (bench/results/content_confirm/rm/, made at
  7ee8d71 by `python bench/content_confirm.py rm`; not committed), unchanged.

An ensemble's reward for a plan is the mean of its RMs' rewards (bench/content_inline.py's exploratory `ensemble`,
unchanged), evaluated as `orchrm bon` does. Each single seed of `E2` is also a row of rows.json (secondary).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import content_confirm as first
import content_inline as second
from content_rm import load_run
from files import write_text_atomic
from orchrm import RewardModel, load_task
from orchrm.bon import HYBRID
from orchrm.mas import locate_traces, read_traces
from stamp import stamp

HERE = Path(__file__).parent
OUT = HERE / "results" / "content_ensemble"
HELDOUT = OUT / "heldout"
ROWS = OUT / "rows.json"
RMS = OUT / "rm"
QUESTIONS = 100
ENSEMBLES = {
    "E2": tuple(RMS / f"content-kind-{s}" for s in (3, 4, 5)),
    "E1": tuple(first.RMS / f"content-kind-{s}" for s in (0, 1, 2)),
}
#: The endpoints PLAN.md names, as `orchrm bon`'s marks call them
PRIMARY = f"{HYBRID}_minus_best_content_blind"
SECONDARY = ("rm_minus_best_content_blind", "rm_minus_shape-mean", f"{HYBRID}_minus_kind-prior")


def fresh_task() -> first.FreshQuestions:
    """The first confirmation's task less every question an earlier run of the positive control sampled."""
    sampled = first.sampled_before() | {
        t.question_id for f in (first.HELDOUT, second.HELDOUT) for t in read_traces(locate_traces(f))
    }
    return first.FreshQuestions(load_task(first.TASK), sampled)


def plans() -> dict[str, list[Any]]:
    return first.heldout_plans(fresh_task(), HELDOUT, QUESTIONS)


def one(arm: str, seed: int) -> dict[str, Any]:
    """Train `content-kind` with RM seed `seed` (rendering v1) and measure it alone on these plans."""
    folder = RMS / f"{arm}-{seed}"
    row = first.train(arm, seed, folder)
    return row | first.measure(RewardModel.load(folder), first.training(), load_run(first.FIRST)[0].bon, plans())


def ensemble() -> dict[str, Any]:
    """Both ensembles on these plans; writes ensemble.json."""
    bon, train, grouped, out = load_run(first.FIRST)[0].bon, first.training(), plans(), {}
    for name, folders in ENSEMBLES.items():
        missing = [str(f) for f in folders if not f.is_dir()]
        if missing:
            raise SystemExit(f"{', '.join(missing)} missing: run `rm` (E2) or `content_confirm.py rm` (E1) first")
        res = first.ensemble_results(list(folders), train, bon, grouped)
        out[name] = {
            "rm_folders": [str(f.relative_to(HERE.parent)) for f in folders],
            "accuracy": {m: v["accuracy"] for m, v in res["methods"].items()},
            "marks": res["marks"],
            "content": res["content"],
            "confirmed": (res["marks"][PRIMARY].get("low") or 0) > 0,
            "stamp": stamp(),
        }
        print(name, PRIMARY, {k: round(v, 3) for k, v in res["marks"][PRIMARY].items()}, flush=True)
    out["confirmed"] = all(out[n]["confirmed"] for n in ENSEMBLES)
    write_text_atomic(OUT / "ensemble.json", json.dumps(out, indent=1) + "\n")
    return out


def rows() -> list[dict[str, Any]]:
    return json.loads(ROWS.read_text())["rows"] if ROWS.exists() else []


def write(all_rows: list[dict[str, Any]]) -> None:
    doc = {"plan": "bench/results/content_ensemble/PLAN.md", "task": first.TASK, "rows": all_rows}
    write_text_atomic(ROWS, json.dumps(doc | {"summary": first.summary(all_rows)}, indent=1) + "\n")


def main() -> None:
    first.confirmation_main(
        __doc__, "content-kind", fresh_task, HELDOUT, QUESTIONS, one, rows, write, first.summary, {"ensemble": ensemble}
    )


if __name__ == "__main__":
    main()
