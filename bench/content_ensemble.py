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

import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

import content_confirm as first
import content_inline as second
from content_rm import load_run
from files import write_text_atomic
from orchrm import RewardModel, load_task
from orchrm.bon import HYBRID, ContentBlind, RunInfo, build_cases, compute_results, score_plans
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


def mean_rewards(scored: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Per question, each plan's mean reward over the RMs (a plan an RM marks invalid is invalid for all: the
    validity check is the plan's, not the RM's)."""
    return {q: [statistics.fmean(x) for x in zip(*(s[q] for s in scored), strict=True)] for q in scored[0]}


def ensemble() -> dict[str, Any]:
    """Both ensembles on these plans; writes ensemble.json."""
    bon, train, grouped, out = load_run(first.FIRST)[0].bon, first.training(), plans(), {}
    for name, folders in ENSEMBLES.items():
        missing = [str(f) for f in folders if not f.is_dir()]
        if missing:
            raise SystemExit(f"{', '.join(missing)} missing: run `rm` (E2) or `content_confirm.py rm` (E1) first")
        scored = [score_plans(RewardModel.load(f), grouped) for f in folders]
        blind = ContentBlind.fit(train, strength=bon.prior_strength, exclude=set(grouped))
        cases = build_cases(grouped, mean_rewards([s[0] for s in scored]), scored[0][1], blind, scored[0][2])
        res = compute_results(cases, bon, [], meta=RunInfo(task=first.TASK)).dump()
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
    args = first.parser(__doc__, ("rollout", "rm", "ensemble", "tables"), "content-kind").parse_args()
    if args.what == "rollout":
        asyncio.run(first.rollout(args.until, args.slots, fresh_task(), HELDOUT, QUESTIONS))
        return
    if args.what == "ensemble":
        ensemble()
        return
    done = rows()
    if args.what == "rm":
        first.run_rows(done, args.arms, args.seeds, args.until, one, write)
    write(done)
    print(json.dumps(first.summary(done), indent=1)[:6000])


if __name__ == "__main__":
    main()
