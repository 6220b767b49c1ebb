"""The positive control: a testbed where what a plan says decides its outcome, and the RM measured on it.

    python bench/content_decides.py                      # the loop, resumable; then summary.json
    python bench/content_decides.py --until 11:40        # stop starting new rollout questions after 11:40
    python bench/content_decides.py --summary-only       # rewrite summary.json from the committed results

Sub-agents are exact tools (`world_qa:tools=exact`: `lookup` reads one fact from the world's records, `calc`
computes), so only the orchestrator (the embedded 0.5B) decodes and a plan's outcome is a deterministic function
of its text: which entity, which attribute, which reference, which operand order. One run of orchrm's own loop
(`orchrm.loop.arun_loop`) into bench/results/content_decides/: training rollouts, pairs, the default RM (MiniLM,
Bradley-Terry), then best-of-N at N = 8 on held-out questions with every selector. Three templates are held out
of training (`UNSEEN`); their questions are all in the test split, reported apart in results.json's
`by_template`. Tools, prompt and question pool were fixed (probes of 12 questions x 8 plans, plan text only)
before any RM number on held-out questions was looked at.

Growing the counts resumes the loop (its rollouts append; the RM retrains when its pairs change). With `--until`
the bench stops between questions: the loop's rollouts stop, the partial run is kept, and a rerun resumes.
`summary.json` holds the marks of issue #47 read from the loop's own results.json, the training pairs' counts,
and `plans_per_minute` of the rollouts on this machine (plans sampled / rollout seconds, summed over sittings in
`timing.json`). The RM folder is not committed (retrained from the committed traces with the same seed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import clock
from files import write_text_atomic
from orchrm import BonConfig, RMConfig
from orchrm.bon import RESULTS_FILE, read_results
from orchrm.llm import DEFAULT_MODEL, open_llm
from orchrm.loop import PAIRS_DIR, LoopConfig, arun_loop
from orchrm.pairs import STATS_FILE
from orchrm.tasks import load_task
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

HERE = Path(__file__).parent
ROOT = HERE / "results" / "content_decides"
UNSEEN = "bridge.employer_city+arithmetic.population_gap+fanout.population"
TASK = f"world_qa:tools=exact;unseen={UNSEEN}"
CONTENT_BLIND = ("router", "kind-prior", "prior", "shortest", "random")


def config_for(args: argparse.Namespace) -> LoopConfig:
    return LoopConfig(
        task=args.task,
        train_questions=args.train_questions,
        test_questions=args.test_questions,
        n_plans=args.n,
        seed=args.seed,
        degree="dag",
        constrained=True,
        temperature=0.9,
        plan_max_tokens=256,
        parallel_questions=args.parallel_questions,
        rm=RMConfig(),
        bon=BonConfig(judge=False),
    )


class Timing:
    """Rollout seconds and plans sampled, summed over sittings (timing.json), from the loop's progress events;
    written every `flush_s` while a rollout runs, so a killed sitting keeps what it measured."""

    def __init__(self, path: Path, flush_s: float = 30.0) -> None:
        self.path = path
        self.totals = json.loads(path.read_text()) if path.exists() else {"rollout_s": 0.0, "plans": 0}
        self.stage: str | None = None
        self.t0 = 0.0
        self.done0 = 0
        self.done = 0
        self.flush_s = flush_s
        self.flushed = time.perf_counter()

    def __call__(self, e) -> None:  # noqa: ANN001 (a LoopEvent)
        rolling = e.rollout is not None or (e.bon is not None and e.bon.stage == "rollout")
        key = "train" if e.rollout is not None else "bon"
        if rolling:
            progress = e.rollout if e.rollout is not None else e.bon.rollout
            done = progress.plans_done if progress is not None else self.done
            if self.stage != key:
                self.close()
                self.stage, self.t0, self.done0 = key, time.perf_counter(), done
            self.done = done
            if time.perf_counter() - self.flushed > self.flush_s:
                self.write(self.window())
        elif self.stage is not None:
            self.close()

    def window(self) -> dict:
        """The totals with the open window added."""
        if self.stage is None:
            return dict(self.totals)
        return {
            "rollout_s": self.totals["rollout_s"] + time.perf_counter() - self.t0,
            "plans": self.totals["plans"] + max(0, self.done - self.done0),
        }

    def write(self, totals: dict) -> None:
        write_text_atomic(self.path, json.dumps(totals, indent=1) + "\n")
        self.flushed = time.perf_counter()

    def close(self) -> None:
        if self.stage is not None:
            self.totals = self.window()
            self.write(self.totals)
            self.stage = None


async def run(args: argparse.Namespace) -> None:
    out = ROOT
    out.mkdir(parents=True, exist_ok=True)
    task = load_task(args.task)
    timing = Timing(out / "timing.json")
    deadline = clock.at(args.until) if args.until else None

    def on_event(e) -> None:  # noqa: ANN001
        timing(e)
        if deadline is not None and time.time() > deadline:
            timing.close()
            print(f"[{time.strftime('%H:%M:%S')}] --until {args.until} reached: stopping (rerun resumes)", flush=True)
            raise SystemExit(0)
        if e.message or e.rollout is None:
            print(f"[{time.strftime('%H:%M:%S')}] {e.stage} {e.message}", flush=True)

    async with open_llm("local", model=args.model) as llm:
        await arun_loop(task, llm, out, config_for(args), on_event=on_event)
    timing.close()


def summarize() -> dict:
    """The marks of issue #47, read from the loop's results.json and pair stats."""
    r = read_results(ROOT / "bon" / RESULTS_FILE)
    d = r.model_dump()
    stats = json.loads((ROOT / PAIRS_DIR / STATS_FILE).read_text())
    timing = json.loads((ROOT / "timing.json").read_text()) if (ROOT / "timing.json").exists() else {}
    content = d.get("content") or {}
    auc = content.get("auc", {})
    blind_auc = {m: auc[m] for m in CONTENT_BLIND if m in auc}
    marks = d["marks"]
    summary = {
        "task": TASK,
        "held_out_questions": d["questions"],
        "n": d["n"],
        "plans_per_minute": round(60 * timing["plans"] / timing["rollout_s"], 1) if timing.get("rollout_s") else None,
        "timing": timing,
        "training_pairs": stats,
        "accuracy": {m: s["accuracy"] for m, s in d["methods"].items()},
        "content": content,
        "marks": marks,
        "rm_same_shape_auc": auc.get("rm"),
        "content_blind_same_shape_auc": blind_auc,
        "by_template": d.get("by_template"),
        "stamp": stamp(),
    }
    write_text_atomic(ROOT / "summary.json", json.dumps(summary, indent=1) + "\n")
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default=TASK)
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--train-questions", type=int, default=110)
    p.add_argument("--test-questions", type=int, default=250)
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parallel-questions", type=int, default=2)
    p.add_argument("--until", help="HH:MM: stop starting new work after this time (a rerun resumes)")
    p.add_argument("--summary-only", action="store_true")
    args = p.parse_args()
    if not args.summary_only:
        asyncio.run(run(args))
    if (ROOT / "bon" / RESULTS_FILE).exists():
        print(json.dumps(summarize()["marks"], indent=1))
    else:
        print("no best-of-N results yet", file=sys.stderr)


if __name__ == "__main__":
    main()
