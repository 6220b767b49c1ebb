"""Test-time scaling benchmark: best-of-N (N=8) with the orchestration RM against every baseline, per task.

    python bench/tts.py                                  # both tasks, to 100 held-out questions each
    python bench/tts.py --task basic_arithmetic --test-questions 40 --step 10

For each task this runs orchrm's whole loop (`orchrm.loop`) into bench/results/tts/<task>/: rollouts on
training questions, pairs, an RM, then best-of-N on held-out questions. It is resumable and incremental:
every trace and judgment is appended as it finishes, the held-out set grows `--step` questions at a time,
and after every step the task's results.json, report and plots are rewritten (and bench/results/tts.md, the
tables bench/README.md quotes), so a run stopped at any point has a report of what it finished and a later
sitting extends it. The traces and results are meant to be
committed; the RM folder is not (it is retrained, with the same seed, from the committed traces when
missing). Writes bench/results/tts.json with each task's marks. The committed traces are gzipped and a
writer never appends to a .gz: run `python bench/traces.py unpack bench/results/tts` before extending a run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import time
from pathlib import Path

import clock
from orchrm import BonConfig, RMConfig
from orchrm.bon import RESULTS_FILE, read_results, write_reports
from orchrm.llm import DEFAULT_MODEL, open_llm
from orchrm.loop import LoopConfig, LoopEvent, arun_loop
from orchrm.pairs import read_pair_stats
from orchrm.rm import CARD_FILE, read_card
from orchrm.tasks import load_task
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

ROOT = Path(__file__).parent / "results" / "tts"
SUMMARY = Path(__file__).parent / "results" / "tts.json"
TABLES = Path(__file__).parent / "results" / "tts.md"
TASKS = ("chain_sum", "search_qa")
# Training questions per task. search_qa needs more: its plans are rarely right, so chain_sum's count left too few
# pairs and none for validation (bench/results/tts/search_qa holds the runs).
TRAIN_QUESTIONS = {"chain_sum": 24, "search_qa": 64}


def config_for(task: str, args: argparse.Namespace, test_questions: int) -> LoopConfig:
    # Budgets sized so one question's 8 plans (sampling + execution) take about a minute on 2 cores.
    return LoopConfig(
        task=task,
        train_questions=args.train_questions or TRAIN_QUESTIONS.get(task, 24),
        test_questions=test_questions,
        n_plans=args.n,
        seed=args.seed,
        constrained=True,
        temperature=0.9,
        plan_max_tokens=320,
        agent_max_tokens=args.agent_max_tokens,
        agent_max_samples=3,
        agent_max_rounds=1,
        parallel_questions=2,
        rm=RMConfig(epochs=args.epochs),
        # Four questions judged at once keep the server's four slots busy; the judge runs at temperature 0,
        # so this changes its speed, not its picks.
        bon=BonConfig(judge=args.judge, judge_max_steps=2, judge_max_tokens=192, judge_concurrency=4),
    )


def log_event(task: str):
    last = {"t": 0.0}

    def on_event(e: LoopEvent) -> None:
        now = time.time()
        if e.stage in ("pairs", "train", "report") or now - last["t"] > 60:
            last["t"] = now
            detail = ""
            if e.rollout is not None:
                r = e.rollout
                detail = f"{r.plans_done}/{r.plans_total} plans, {r.correct} correct, {r.tokens:,} tok"
            if e.bon is not None:
                b = e.bon
                detail = (f"{b.rollout.plans_done}/{b.rollout.plans_total} held-out plans" if b.rollout else "") + (
                    f", judged {b.judged}/{b.to_judge}" if b.stage == "judge" else ""
                )
            print(f"[{time.strftime('%H:%M:%S')}] {task} {e.stage} {detail} {e.message}", flush=True)

    return on_event


def done_questions(task: str) -> int:
    """Held-out questions already in the task's results, so a later sitting starts from the next step."""
    path = ROOT / task / "bon" / RESULTS_FILE
    return read_results(path).questions if path.exists() else 0


def summarize() -> dict:
    out = {"machine": {"cpus": __import__("os").cpu_count(), "platform": platform.platform()}, "tasks": {}}
    for path in sorted(ROOT.glob(f"*/bon/{RESULTS_FILE}")):
        r = read_results(path).dump()
        out["tasks"][r["task"]] = {
            "questions": r["questions"],
            "n": r["n"],
            "model": r.get("model"),
            "accuracy": {m: v["accuracy"] for m, v in r["methods"].items()},
            "tokens_per_question": {m: v["tokens"] for m, v in r["methods"].items()},
            "marks": r["marks"],
            "adaptive_sweep": r["adaptive_sweep"],
        }
    SUMMARY.write_text(json.dumps({**out, "stamp": stamp()}, indent=2) + "\n")
    TABLES.write_text(markdown())
    return out


def _iv(d: dict | None, scale: float = 100, digits: int = 1) -> str:
    if d is None or d.get("value") is None:
        return "n/a"

    def f(x: float) -> str:
        return f"{x * scale:.{digits}f}".replace("-0.0", "0.0") if digits else f"{x * scale:.0f}"

    return f(d["value"]) if d.get("low") is None else f"{f(d['value'])} [{f(d['low'])}, {f(d['high'])}]"


def markdown() -> str:
    """Each task's tables for bench/README.md, from the committed results (and the RM card, when present)."""
    out = []
    for path in sorted(ROOT.glob(f"*/bon/{RESULTS_FILE}")):
        r = read_results(path).dump()
        task, m = r["task"], r["marks"]
        pairs = read_pair_stats(ROOT / task / "pairs").model_dump()
        card_path = ROOT / task / "rm" / CARD_FILE
        card = read_card(card_path.parent) if card_path.exists() else None
        val = card.metrics.get("val_accuracy") if card else None
        shown = (
            "n/a (RM folder missing)" if card is None else "n/a (no validation pairs)" if val is None else f"{val:.3f}"
        )
        sources = ", ".join(f"{k} {v['train']}" for k, v in pairs["per_source"].items())
        train = sum(v["train"] for v in pairs["per_source"].values())
        out += [
            f"### {task}: {r['questions']} held-out questions, N = {r['n']}\n",
            f"RM trained on {train} pairs ({sources}) from {pairs['questions']} training questions; held-out pairwise "
            f"accuracy {shown}. "
            f"Valid plans per held-out question: {r['valid_plans_per_question']} of {r['n']}.\n",
            "| method | accuracy % [95% CI] | tokens/q (plan / execute / verify) | plans run |",
            "|---|---|---|---|",
        ]
        for name, v in r["methods"].items():
            t = v["tokens"]
            out.append(
                f"| {name} | {_iv(v['accuracy'])} | {t['total']:,.0f} ({t['plan']:,.0f} / {t['execute']:,.0f} / "
                f"{t['verify']:,.0f}) | {v['executed_plans']:.2f} |"
            )
        out += [
            "",
            "| mark | measured [95% CI] | the paper |",
            "|---|---|---|",
            f"| rm − random, accuracy points | {_iv(m['rm_minus_random'])} | up to +8 |",
            f"| rm − majority, accuracy points | {_iv(m['rm_minus_majority'])} | |",
            f"| rm's tokens as a share of majority's | {_iv(m['rm_tokens_over_majority'], 1, 2)} | |",
            f"| judge's tokens as a multiple of rm's | {_iv(m.get('judge_tokens_over_rm'), 1, 2)} "
            "| 142.80M / 2.38M = 60 |",
            f"| share of the random→oracle gap rm closes, % | {_iv(m['gap_closed_random_to_oracle'], 100, 0)} | |",
            "",
            "rm-adaptive over its threshold (tau, in standard deviations of the rewards; 0 is `rm`):",
            "",
            "| tau | accuracy % [95% CI] | tokens/q | plans run |",
            "|---|---|---|---|",
        ]
        for row in r["adaptive_sweep"]:
            tau = "all" if row["tau"] is None else f"{row['tau']:g}"
            out.append(
                f"| {tau} | {_iv(row['accuracy'])} | {row['tokens']['total']:,.0f} | {row['executed_plans']:.2f} |"
            )
        out.append(
            f"\nPlots: `bench/results/tts/{task}/bon/accuracy_vs_n.png`, `accuracy_vs_tokens.png`; "
            "report: `report.md`.\n"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", action="append", help=f"task (repeatable; default {', '.join(TASKS)})")
    ap.add_argument("--train-questions", type=int, default=None, help=f"default per task: {TRAIN_QUESTIONS}, else 24")
    ap.add_argument("--test-questions", type=int, default=100, help="held-out questions to reach")
    ap.add_argument("--step", type=int, default=10, help="held-out questions added per step")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--agent-max-tokens", type=int, default=160)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument(
        "--judge", action=argparse.BooleanOptionalAction, default=True, help="run the listwise judge (at N only)"
    )
    ap.add_argument("--hours", type=float, default=None, help="stop starting new steps after this long")
    ap.add_argument("--until", default=None, help="stop starting new steps after this local time (HH:MM)")
    ap.add_argument(
        "--tables-only", action="store_true", help="only rewrite tts.json and tts.md from the results so far"
    )
    args = ap.parse_args()
    if args.tables_only:
        summarize()
        print(TABLES.read_text())
        return
    deadline = None if args.hours is None else time.time() + args.hours * 3600
    if args.until is not None:
        until = clock.at(args.until)
        deadline = until if deadline is None else min(deadline, until)
    tasks = args.task or list(TASKS)
    with open_llm("local", model=args.model) as llm:
        # Tasks take turns one step at a time, so every task has results early.
        reached = {t: done_questions(t) for t in tasks}
        while any(reached[t] < args.test_questions for t in tasks):
            for task in tasks:
                if reached[task] >= args.test_questions:
                    continue
                if deadline is not None and time.time() > deadline:
                    print("time limit reached; re-run the same command to continue", flush=True)
                    summarize()
                    return
                target = min(args.test_questions, reached[task] + args.step)
                out = ROOT / task
                result = asyncio.run(
                    arun_loop(load_task(task), llm, out, config_for(task, args, target), on_event=log_event(task))
                )
                write_reports(result.bon.results, out / "bon")
                r = result.bon.results
                acc = {m: round(100 * (v.accuracy.value or 0), 1) for m, v in r.methods.items()}
                print(f"[{time.strftime('%H:%M:%S')}] {task}: {r.questions} held-out questions: {acc}", flush=True)
                reached[task] = target
                summarize()
    print(json.dumps(summarize()["tasks"], indent=1)[:4000])


if __name__ == "__main__":
    main()
