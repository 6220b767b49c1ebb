"""Replay the committed best-of-N runs through the content-blind baselines, without any LLM or RM call.

    python bench/baselines_replay.py

For each run under bench/results/tts/ and bench/results/orchestration/ this reads what the run committed —
the held-out traces, the RM's rewards per plan (bon/per_question.jsonl), the judge's picks
(bon/judgments.jsonl) and the training traces (train/traces.jsonl, the ones the RM's pairs came from, which
fit `prior`, `kind-prior` and `router`) — rebuilds the same cases, and recomputes every method on the same N
plans: rm, random, shortest, prior, kind-prior, router, shape-mean, majority, judge, oracle. It prints their
accuracies, rm's paired difference to each and to the best content-blind selector (bootstrap 95% intervals
over questions; the best is chosen on the same questions, which flatters it), how many held-out plans the
router scored by the shape prior because it never saw their shape, the within-question AUCs and the content
measures among plans of one shape (`orchrm.bon.content`: headroom, same-shape pairs, each score's AUC on them);
it checks that rm, random, majority and oracle reproduce the committed results exactly, and writes
bench/results/baselines_replay.json.

Every number is computed under the committed grades. Under `regraded` the same is recomputed with the traces
(training and held-out) graded by today's task scorers (`regrade.py`: e.g. "825 - 515 = 310" against 310 is
now right), with the plans that flipped; the RM's rewards stay the committed ones (its pairs were built
from the old grades), and the committed files are not rewritten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchrm import Trace, read_traces
from orchrm.bon import (
    JUDGMENTS_FILE,
    ContentBlind,
    Interval,
    RunInfo,
    build_cases,
    compute_results,
    read_judgments,
    read_per_question,
    read_results,
)
from orchrm.loop import LOOP_FILE, LoopConfig, read_loop_config
from orchrm.mas import find_traces, first_plans, locate_traces, run_questions, run_traces
from orchrm.tasks import load_task
from regrade import regrade
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

ROOTS = (Path(__file__).parent / "results" / "tts", Path(__file__).parent / "results" / "orchestration")
OUT = Path(__file__).parent / "results" / "baselines_replay.json"
REPRODUCED = ("rm", "random", "majority", "oracle")  # methods the committed results.json already has


def evaluate(
    config: LoopConfig, held: list[Trace], train: list[Trace] | None, rows: list[dict], judgments: list
) -> tuple[dict[str, Any], int]:
    """results.json's content for the committed rewards on these traces, and the number of valid plans."""
    qids = [r["question_id"] for r in rows]
    grouped = first_plans(held, qids, config.n_plans)
    rewards = {r["question_id"]: [r["rewards"][str(t.plan_index)] for t in grouped[r["question_id"]]] for r in rows}
    blind = ContentBlind.fit(train, strength=config.bon.prior_strength, exclude=qids) if train is not None else None
    cases = build_cases(grouped, rewards, {}, blind)
    meta = RunInfo(
        task=config.task, prior=blind.prior.summary() if blind else None, baselines=blind.info() if blind else None
    )
    return compute_results(cases, config.bon, judgments, meta=meta).dump(), sum(len(c.valid) for c in cases)


def headline(results: dict[str, Any]) -> dict[str, Any]:
    return {
        "accuracy": {m: v["accuracy"] for m, v in results["methods"].items()},
        "rm_minus": {m: v for k, v in results["marks"].items() if k.startswith("rm_minus_") for m in [k[9:]]},
        "best_content_blind": results["marks"].get("best_content_blind"),
        "router_fallbacks": results["router_fallbacks"],
    }


def regraded(
    config: LoopConfig, held: list[Trace], train: list[Trace] | None, rows: list[dict], judgments: list
) -> dict[str, Any]:
    """The headline numbers with every trace graded by today's scorers, and the plans that flipped."""
    task = load_task(config.task)
    questions = run_questions(task, config.test_questions, "test", config.seed)
    questions += run_questions(task, config.train_questions, "train", config.seed)
    new_held = regrade(run_traces(held, [r["question_id"] for r in rows], config.n_plans), task, questions)
    new_train = regrade(train, task, questions) if train is not None else None
    results, _ = evaluate(config, new_held.traces, new_train.traces if new_train else None, rows, judgments)
    return {
        "heldout_plans_flipped": dict(new_held.flips),
        "train_plans_flipped": dict(new_train.flips) if new_train else {},
        "examples": new_held.examples,
        **headline(results),
    }


def replay(folder: Path) -> dict[str, Any]:
    config = read_loop_config(folder)
    bon = folder / "bon"
    rows = read_per_question(bon)
    held = read_traces(locate_traces(bon / "heldout"))
    key = config.bon.judge_key()
    judgments = [j for j in read_judgments(bon / JUDGMENTS_FILE) if j.key == key] if config.bon.judge else []
    train_file = find_traces(folder / "train")
    train = read_traces(train_file) if train_file else None
    results, valid = evaluate(config, held, train, rows, judgments)
    committed = read_results(bon).dump()
    check = {
        m: abs(results["methods"][m]["accuracy"]["value"] - committed["methods"][m]["accuracy"]["value"]) < 1e-9
        for m in REPRODUCED
    }
    return {
        "task": config.task,
        "questions": results["questions"],
        "n": results["n"],
        "prior": results["prior"],
        "reproduces_committed": check,
        "accuracy": {m: v["accuracy"] for m, v in results["methods"].items()},
        "tokens_per_question": {m: v["tokens"]["total"] for m, v in results["methods"].items()},
        "rm_minus": {m: v for k, v in results["marks"].items() if k.startswith("rm_minus_") for m in [k[9:]]},
        "best_trivial": results["marks"].get("best_trivial"),
        "best_content_blind": results["marks"].get("best_content_blind"),
        "router_fallbacks": results["router_fallbacks"],
        "baselines": results.get("baselines"),
        "valid_plans": valid,
        "gap_closed_random_to_oracle": results["marks"]["gap_closed_random_to_oracle"],
        "auc": results["auc"],
        "content": results["content"],
        "per_kind": results["per_kind"],
        "notes": results["notes"],
        "regraded": regraded(config, held, train, rows, judgments),
    }


def show(r: dict[str, Any]) -> str:
    iv = lambda d, s=100.0, k=1: Interval.model_validate(d).fmt(s, k)  # noqa: E731
    ok = ", ".join(f"{m} {'yes' if v else 'NO'}" for m, v in r["reproduces_committed"].items())
    lines = [f"## {r['task']}: {r['questions']} held-out questions, N = {r['n']} (reproduces committed: {ok})"]
    p = r["prior"]
    lines.append(f"prior fitted on {p['trials']} training plans, signatures {p['signatures']}" if p else "prior: none")
    lines.append("method       accuracy % [95% CI]     tokens/q   rm − method, points [95% CI]")
    for m, acc in r["accuracy"].items():
        diff = iv(r["rm_minus"][m]) if m in r["rm_minus"] else ""
        lines.append(f"{m:<12} {iv(acc):<23} {r['tokens_per_question'][m]:>8,.0f}   {diff}")
    gap = iv(r["gap_closed_random_to_oracle"], 100, 0)
    lines.append(
        f"rm − best trivial ({r['best_trivial']}): {iv(r['rm_minus']['best_trivial'])}; "
        f"rm closes {gap}% of random→oracle"
    )
    blind = r["best_content_blind"]
    lines.append(
        f"rm − best content-blind ({blind}, chosen on these questions): {iv(r['rm_minus']['best_content_blind'])}; "
        f"rm − shape-mean: {iv(r['rm_minus']['shape-mean'])}"
    )
    lines.append(
        f"router: {r['router_fallbacks']} of {r['valid_plans']} valid held-out plans have a shape training never "
        "saw (scored by the shape prior)"
    )
    for m, a in r["auc"].items():
        lines.append(f"within-question AUC, {m:<9} {iv(a, 1.0, 3)}  ({a['n_questions']} questions with mixed outcomes)")
    c = r["content"]
    lines.append(
        f"content headroom {iv(c['headroom'])} points; same-shape pairs {c['same_shape_pairs']}, "
        f"{c['clean_pairs']} without example copies on {c['questions_with_clean_pairs']} questions"
    )
    for m, a in c["auc"].items():
        lines.append(
            f"same-shape AUC, {m:<9} {iv(a, 1.0, 3)}  ({a['n_pairs']} clean pairs, {a['n_questions']} questions)"
        )
    g = r["regraded"]
    lines.append(
        f"regraded by today's scorers: held-out plans flipped {g['heldout_plans_flipped'] or 'none'}, "
        f"training plans flipped {g['train_plans_flipped'] or 'none'}; e.g. {'; '.join(g['examples'][:2]) or '-'}"
    )
    if g["heldout_plans_flipped"] or g["train_plans_flipped"]:
        accs = ", ".join(
            f"{m} {iv(a)}" for m, a in g["accuracy"].items() if m not in ("rm-adaptive", "majority", "judge")
        )
        lines.append(f"  under today's grades: {accs}")
        lines.append(
            f"  rm − best content-blind ({g['best_content_blind']}): {iv(g['rm_minus']['best_content_blind'])}; "
            f"rm − shape-mean: {iv(g['rm_minus']['shape-mean'])}; router fallbacks {g['router_fallbacks']}"
        )
    return "\n".join(lines)


def main() -> None:
    out = {
        "source": "bench/results/tts and bench/results/orchestration "
        "(committed traces, rewards and judgments; no LLM or RM call)",
        "tasks": {},
    }
    for folder in sorted(p.parent for root in ROOTS for p in root.glob(f"*/{LOOP_FILE}")):
        r = replay(folder)
        out["tasks"][r["task"]] = r
        print(show(r) + "\n", flush=True)
    OUT.write_text(json.dumps({**out, "stamp": stamp()}, indent=2) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
