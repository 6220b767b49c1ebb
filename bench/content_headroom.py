"""Does plan content decide on a rollout? Content headroom and same-shape pairs of any rollout folders.

    .venv/bin/orchrm rollout --task "world_qa:kinds=bridge+chain+fanout+arithmetic" --split test --n-questions 12 \\
        --n-plans 8 --seed 0 --temperature 0.9 --plan-max-tokens 320 --constrained --agent-max-tokens 192 \\
        --agent-max-samples 3 --agent-max-rounds 1 --agent-context final --out runs/content_final
    .venv/bin/python bench/content_headroom.py runs/content_final [more runs...] --label final-0.5b

For each folder: its questions with all N plans, valid plans, plans right, questions with any right, the
content headroom (`orchrm.bon.content`: the most successful shape's P(any right) − mean right, averaged over
questions) and the same-shape pairs with different outcomes; what each run was (task, models, agent context)
is read from its run.json. Results are appended under their label to bench/results/content_headroom.json.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from files import write_text_atomic
from orchrm import read_traces
from orchrm.bon import build_cases, question_headroom, same_shape_pairs
from orchrm.mas import RUN_FILE, first_plans, locate_traces
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

OUT = Path(__file__).parent / "results" / "content_headroom.json"


def summarize(folder: Path, n: int) -> dict[str, Any]:
    traces = read_traces(locate_traces(folder))
    ids = list(dict.fromkeys(t.question_id for t in traces))
    full = {q: g for q, g in first_plans(traces, ids, n).items() if len(g) == n}
    cases = build_cases(full, {q: [0.0] * len(g) for q, g in full.items()}, {})
    run = json.loads((folder / RUN_FILE).read_text())
    return {
        "folder": str(folder),
        "task": run.get("task"),
        "agent_context": run.get("agent_context"),
        "model": run.get("model_id"),
        "agent_model": run.get("agent_model_id") or run.get("model_id"),
        "plans": len(traces),
        "questions": len(cases),
        "kinds": dict(Counter(c.kind for c in cases)),
        "valid": sum(len(c.valid) for c in cases),
        "right": sum(x.correct for c in cases for x in c.valid),
        "questions_with_any_right": sum(any(x.correct for x in c.valid) for c in cases),
        "headroom": sum(map(question_headroom, cases)) / max(len(cases), 1),
        "same_shape_pairs": sum(len(same_shape_pairs(c, clean=False)) for c in cases),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--n", type=int, default=8, help="Plans per question (questions with fewer are left out).")
    ap.add_argument("--label", required=True)
    args = ap.parse_args()
    data = json.loads(OUT.read_text()) if OUT.exists() else {}
    data[args.label] = {"runs": [summarize(r, args.n) for r in args.runs], "stamp": stamp()}
    write_text_atomic(OUT, json.dumps(data, indent=1) + "\n")
    for r in data[args.label]["runs"]:
        print(
            f"{args.label}: {r['task']} (agents {r['agent_model']}, context {r['agent_context']}): {r['plans']} plans, "
            f"{r['questions']} complete questions {r['kinds']}; valid {r['valid']}, right {r['right']}, questions with "
            f"any right {r['questions_with_any_right']}; headroom {100 * r['headroom']:.1f} points; same-shape pairs "
            f"{r['same_shape_pairs']}"
        )


if __name__ == "__main__":
    main()
