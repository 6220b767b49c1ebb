"""Orchestration that decides the outcome: best-of-N on a mixed task pool with DAG plans, held to trivial priors.

    python bench/orchestration.py                  # mix:world_qa,chain_sum, 30 training and 150 held-out questions
    python bench/orchestration.py --until 17:10    # stop starting new steps after 17:10 (resume later)
    python bench/orchestration.py --tables-only    # rewrite the summary from what is committed

One run of orchrm's whole loop (`orchrm.loop`) into bench/results/orchestration/<task>/: training rollouts
(N plans per question, all executed), pairs, an RM, then best-of-N on held-out questions, growing `--step`
questions at a time. Every trace is appended as it finishes, so a stopped run resumes where it stopped; after
every step the results, the report and bench/results/orchestration.md are rewritten. Besides the loop's own
results, the summary holds what issue #13 asks for:

- the plan-shape table: accuracy and execution tokens of each plan shape (topological levels of agent types,
  `search | python` is one search feeding a python agent) per question kind, over all held-out plans;
- decode throughput during each step (non-cached completion tokens / wall time) against the same sitting's
  reference (4 concurrent 128-token completions on each model, as `bench/llm_throughput.py` measures).

The RM folder is not committed (retrained with the same seed from the committed traces when missing). The
committed traces are gzipped: `--tables-only` reads them as they are; resuming or growing the run appends,
so run `python bench/traces.py unpack bench/results/orchestration/<task>` first (a writer refuses a .gz).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from collections import defaultdict
from pathlib import Path

import clock
from orchrm import BonConfig, RMConfig, Trace, read_traces
from orchrm.bon import RESULTS_FILE, read_per_question, read_results, write_reports
from orchrm.llm import DEFAULT_MODEL, open_llm
from orchrm.loop import LoopConfig, arun_loop
from orchrm.mas import first_plans, locate_traces, plan_shape
from orchrm.tasks import load_task

HERE = Path(__file__).parent
ROOT = HERE / "results" / "orchestration"
TABLES = HERE / "results" / "orchestration.md"
TASK = "mix:world_qa,chain_sum"


def slug(task: str) -> str:
    return task.replace(":", "_").replace(",", "+")


def config_for(args: argparse.Namespace, test_questions: int) -> LoopConfig:
    return LoopConfig(
        task=args.task,
        train_questions=args.train_questions,
        test_questions=test_questions,
        n_plans=args.n,
        seed=args.seed,
        degree="dag",
        constrained=True,
        temperature=0.9,
        plan_max_tokens=args.plan_max_tokens,
        agent_max_tokens=args.agent_max_tokens,
        agent_max_samples=3,
        agent_max_rounds=1,
        parallel_questions=args.parallel_questions,
        rm=RMConfig(epochs=args.epochs),
        bon=BonConfig(judge=args.judge, judge_max_steps=2, judge_max_tokens=192, judge_concurrency=4),
    )


def kinds_of(task_spec: str, n: int, seed: int) -> dict[str, str]:
    task = load_task(task_spec)
    return {q.id: str(q.metadata.get("kind", task.name)) for q in task.questions(n, split="test", seed=seed)}


def shape_table(out: Path, kinds: dict[str, str]) -> dict:
    """Per (shape, kind): plans, accuracy, execution tokens per plan, over all held-out plans."""
    cells: dict[tuple[str, str], list[tuple[bool, int]]] = defaultdict(list)
    for t in read_traces(locate_traces(out / "bon" / "heldout")):
        if t.question_id not in kinds:
            continue
        kind = getattr(t, "question_kind", None) or kinds[t.question_id]
        exe = t.tokens.get("execute")
        ok = bool(t.score and t.score.correct)
        for k in (kind, "all"):
            cells[(plan_shape(t.plan if t.valid else None), k)].append((ok, exe.total_tokens if exe else 0))
    rows = [
        {
            "shape": s,
            "kind": k,
            "plans": len(v),
            "accuracy": sum(o for o, _ in v) / len(v),
            "execute_tokens": statistics.fmean(x for _, x in v),
        }
        for (s, k), v in cells.items()
    ]
    rows.sort(key=lambda r: (r["kind"], -r["plans"]))
    return {"rows": rows}


async def reference_decode(llm, tag: str) -> float:  # noqa: ANN001
    """Aggregate decode tok/s at 4 concurrent 128-token requests, unique prompts (no cache), as llm_throughput."""
    prompts = [f"[{uuid.uuid4().hex[:12]}] Count from 1 to 300, separated by single spaces." for _ in range(4)]
    start = time.perf_counter()
    outs = await asyncio.gather(
        *(llm.agenerate(p, category="execute", max_tokens=128, use_cache=False) for p in prompts)
    )
    wall = time.perf_counter() - start
    rate = sum(o[0].usage.completion_tokens for o in outs) / wall
    print(f"[{time.strftime('%H:%M:%S')}] reference decode {tag}: {rate:.1f} tok/s (4 concurrent)", flush=True)
    return rate


def spent(llm) -> int:  # noqa: ANN001
    return sum(t.spent_completion_tokens for t in llm.ledger.totals().values())


class RolloutWindows:
    """Decode tokens and wall time while rollouts run (RM training and scoring excluded): the loop's events
    open a window at the first rollout progress report and close it at the next event of another stage."""

    def __init__(self, llm) -> None:  # noqa: ANN001
        self.llm, self.open, self.tokens, self.seconds = llm, None, 0, 0.0

    def __call__(self, e) -> None:  # noqa: ANN001 (a LoopEvent)
        rolling = e.rollout is not None or (e.bon is not None and e.bon.stage == "rollout")
        now = (time.perf_counter(), spent(self.llm))
        if rolling and self.open is None:
            self.open = now
        elif not rolling and self.open is not None:
            self.close(now)

    def close(self, now: tuple[float, int] | None = None) -> None:
        if self.open is not None:
            t, k = now or (time.perf_counter(), spent(self.llm))
            self.seconds += t - self.open[0]
            self.tokens += k - self.open[1]
            self.open = None


def summarize(args: argparse.Namespace) -> str:
    out = ROOT / slug(args.task)
    path = out / "bon" / RESULTS_FILE
    if not path.exists():
        return "(no results yet)"
    r = read_results(path).dump()
    kinds = kinds_of(args.task, r["questions"], args.seed)
    shapes = shape_table(out, kinds)
    log_path = out / "throughput.json"
    steps = json.loads(log_path.read_text()) if log_path.exists() else []
    (out / "shapes.json").write_text(json.dumps(shapes, indent=1) + "\n")
    per_q, plans = heldout(out, r["n"])
    r["shared_prompt_ratio"] = shared_prompt_ratio(per_q, plans)
    picks = picks_table(per_q, plans, kinds)
    (out / "picks.json").write_text(json.dumps(picks, indent=1) + "\n")
    r["picks"] = picks
    text = markdown(r, shapes, steps)
    TABLES.write_text(text)
    return text


def heldout(out: Path, n: int) -> tuple[list[dict], dict[str, list[Trace]]]:
    """The best-of-N rows (per_question.jsonl) and their plans, each (question, index) counted once
    (`first_plans`, the rule the run itself reads traces back by): read once for every table below."""
    per_q = read_per_question(out / "bon")
    plans = first_plans(read_traces(locate_traces(out / "bon" / "heldout")), [r["question_id"] for r in per_q], n)
    return per_q, plans


def picks_table(per_q: list[dict], plans: dict[str, list[Trace]], kinds: dict[str, str]) -> dict:
    """What each selector picked, per question kind: the shapes of the chosen plans and how often they were
    right (what a learned selector prefers, beside the trivial ones that could fake it). A tie among valid
    plans (`prior` and `shortest` often have them) gives each tied plan an equal share of the pick."""
    keys = {"rm": ("rewards", 1.0), "prior": ("priors", 1.0), "shortest": ("lengths", -1.0)}
    cells: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in per_q:
        kind = kinds.get(r["question_id"], "?")
        valid = {t.plan_index: t for t in plans[r["question_id"]] if t.valid}
        for method, (field, sign) in keys.items():
            scored = {int(k): sign * v for k, v in (r.get(field) or {}).items() if int(k) in valid and v is not None}
            if not scored:
                continue
            tied = [i for i, v in scored.items() if v == max(scored.values())]
            for i in tied:
                right = float(bool(valid[i].score and valid[i].score.correct))
                for k in (kind, "all"):
                    cell = cells[(method, k, plan_shape(valid[i].plan))]
                    cell[0] += 1 / len(tied)
                    cell[1] += right / len(tied)
    rows = [
        {"method": m, "kind": k, "shape": sh, "picked": round(v[0], 2), "correct": round(v[1], 2)}
        for (m, k, sh), v in cells.items()
    ]
    rows.sort(key=lambda r: (r["kind"], r["method"], -r["picked"]))
    return {"rows": rows}


def shared_prompt_ratio(per_q: list[dict], plans: dict[str, list[Trace]]) -> dict | None:
    """rm's tokens / majority's had each question's N plans come from one request for N completions (the prompt
    read and billed once, as OpenAI-style `n` bills it), computed from the same traces and picks: a
    counterfactual for the token mark, not a measurement of such a run."""
    rm = majority = 0.0
    for r in per_q:
        calls = [t.tokens["plan"] for t in plans[r["question_id"]] if "plan" in t.tokens]
        # what N separate requests paid beyond one prompt and N completions
        saved = (
            sum(c.total_tokens for c in calls)
            - max((c.prompt_tokens for c in calls), default=0)
            - sum(c.completion_tokens for c in calls)
        )
        rm += r["rm"]["tokens"] - saved
        majority += r["majority"]["tokens"] - saved
    return {"value": rm / majority} if majority else None


def _iv(d: dict | None, scale: float = 100, digits: int = 1) -> str:
    if not d or d.get("value") is None:
        return "n/a"
    f = lambda x: f"{x * scale:.{digits}f}"  # noqa: E731
    return f(d["value"]) if d.get("low") is None else f"{f(d['value'])} [{f(d['low'])}, {f(d['high'])}]"


def markdown(r: dict, shapes: dict, steps: list[dict]) -> str:
    m, methods = r["marks"], r["methods"]
    lines = [
        f"## {r['task']}: {r['questions']} held-out questions, N = {r['n']}, degree dag\n",
        f"Orchestrator `{r.get('model')}`; valid plans per question {r['valid_plans_per_question']} of {r['n']}.\n",
        "| method | accuracy % [95% CI] | tokens/q (plan / execute / verify) | plans run |",
        "|---|---|---|---|",
    ]
    for name, v in methods.items():
        t = v["tokens"]
        lines.append(
            f"| {name} | {_iv(v['accuracy'])} | {t['total']:,.0f} ({t['plan']:,.0f} / {t['execute']:,.0f} / "
            f"{t['verify']:,.0f}) | {v['executed_plans']:.2f} |"
        )
    acc = {k: v["accuracy"]["value"] for k, v in methods.items()}
    lines += ["", "| mark (issue #13) | target | measured [95% CI] |", "|---|---|---|"]
    oracle_gap = 100 * (acc.get("oracle", 0) - acc.get("random", 0))
    lines.append(f"| oracle@N − random, points | ≥ 30 | {oracle_gap:.1f} |")
    big = [row for row in shapes["rows"] if row["kind"] == "all" and row["plans"] >= 20 and row["shape"] != "invalid"]
    if len(big) >= 2:
        best, worst = max(big, key=lambda x: x["accuracy"]), min(big, key=lambda x: x["accuracy"])
        ratio = "inf" if worst["accuracy"] == 0 else f"{best['accuracy'] / worst['accuracy']:.1f}×"
        lines.append(
            f"| best shape / worst shape accuracy (shapes with ≥ 20 plans) | ≥ 3× | {ratio} "
            f"(`{best['shape']}` {100 * best['accuracy']:.1f}% vs `{worst['shape']}` {100 * worst['accuracy']:.1f}%) |"
        )
    lines.append(f"| rm − random, points | ≥ +15 | {_iv(m.get('rm_minus_random'))} |")
    trivial = m.get("rm_minus_best_trivial")
    which = f" (vs `{m.get('best_trivial')}`)" if m.get("best_trivial") else ""
    lines.append(f"| rm − best of shortest and prior, points | ≥ +5, excluding 0 | {_iv(trivial)}{which} |")
    if m.get("best_content_blind"):  # issue #27: the best selector that never reads a plan, and rm's own shape choice
        lines.append(
            f"| rm − best content-blind (of shortest, prior, kind-prior, router; chosen on these questions), "
            f"points | ≥ +5, excluding 0 | {_iv(m.get('rm_minus_best_content_blind'))} "
            f"(vs `{m['best_content_blind']}`) |"
        )
        lines.append(f"| rm − shape-mean, points | ≥ +3, excluding 0 | {_iv(m.get('rm_minus_shape-mean'))} |")
    lines.append(
        f"| share of random→oracle gap rm closes, % | ≥ 60 | {_iv(m.get('gap_closed_random_to_oracle'), 100, 0)} |"
    )
    lines.append(f"| rm's tokens / majority's | ≤ 0.3 | {_iv(m.get('rm_tokens_over_majority'), 1, 2)} |")
    if r.get("shared_prompt_ratio"):
        lines.append(
            f"| (computed, not run: the same with each question's N plans from one request, prompt billed once) "
            f"| ≤ 0.3 | {r['shared_prompt_ratio']['value']:.2f} |"
        )
    auc = (r.get("auc") or {}).get("rm")
    lines.append(f"| RM within-question AUC | ≥ 0.75 | {_iv(auc, 1, 3)} |")
    if steps:
        timed = [s for s in steps if s.get("reference_tok_s") and s.get("decode_tok_s")]
        ratios = [s["decode_tok_s"] / s["reference_tok_s"] for s in timed]
        if ratios:
            # steps run before --parallel-questions existed ran 2 questions at a time
            per_step = ", ".join(
                f"{x:.2f}" + (f" (p{s['parallel_questions']})" if s.get("parallel_questions", 2) != 2 else "")
                for x, s in zip(ratios, timed)
            )
            lines.append(
                f"| decode tok/s during the run / reference | ≥ 0.8 | {statistics.fmean(ratios):.2f} "
                f"(per step: {per_step}) |"
            )
    if r.get("auc"):
        lines += [
            "",
            "Within-question AUC on questions with mixed outcomes:",
            "",
            "| scorer | AUC [95% CI] |",
            "|---|---|",
        ]
        lines += [f"| {k} | {_iv(v, 1, 3)} |" for k, v in r["auc"].items() if isinstance(v, dict)]
    per_kind = r.get("per_kind") or {}  # {kind: {method: accuracy, ..., "n": questions}}
    if per_kind:
        kinds = sorted(per_kind)
        lines += [
            "",
            "Accuracy per question kind (%, n = held-out questions of the kind):",
            "",
            "| method | " + " | ".join(f"{k} (n={per_kind[k]['n']})" for k in kinds) + " |",
            "|---|" + "---|" * len(kinds),
        ]
        for meth in methods:
            cells = [f"{100 * per_kind[k][meth]:.1f}" if meth in per_kind[k] else "" for k in kinds]
            lines.append(f"| {meth} | " + " | ".join(cells) + " |")
    if r.get("picks"):
        by: dict[tuple[str, str], list[str]] = defaultdict(list)
        for row in r["picks"]["rows"]:
            if row["picked"] >= 0.5:
                by[(row["kind"], row["method"])].append(f"`{row['shape']}` {row['correct']:g}/{row['picked']:g}")
        lines += [
            "",
            "What each selector picked, per kind (shape of the chosen plan: right/picked; ties share a pick; "
            "shapes under half a pick left out):",
            "",
            "| kind | method | picks |",
            "|---|---|---|",
        ]
        lines += [f"| {k} | {m} | {', '.join(v)} |" for (k, m), v in sorted(by.items())]
    lines += [
        "",
        "Plan shapes over all held-out plans (accuracy %, execution tokens per plan, plans):",
        "",
        "| kind | shape | plans | accuracy % | execute tok |",
        "|---|---|---|---|---|",
    ]
    for row in shapes["rows"]:
        if row["plans"] >= 5:
            lines.append(
                f"| {row['kind']} | `{row['shape']}` | {row['plans']} | {100 * row['accuracy']:.1f} | "
                f"{row['execute_tokens']:,.0f} |"
            )
    return "\n".join(lines) + "\n"


def deadline_of(args: argparse.Namespace) -> float | None:
    if args.until is None:
        return None
    return clock.at(args.until)


def open_models(args: argparse.Namespace):  # noqa: ANN201
    orch = open_llm("local", model=args.orchestrator_model)
    if args.agent_model in (None, args.orchestrator_model):
        return orch, None
    return orch, open_llm("local", model=args.agent_model, ledger=orch.ledger)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default=TASK)
    ap.add_argument("--train-questions", type=int, default=30, help="the committed run used 30")
    ap.add_argument("--test-questions", type=int, default=150)
    ap.add_argument("--step", type=int, default=10)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--plan-max-tokens", type=int, default=320)
    ap.add_argument("--agent-max-tokens", type=int, default=192)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parallel-questions", type=int, default=2, help="questions in flight (each with its N plans)")
    ap.add_argument("--orchestrator-model", default=DEFAULT_MODEL)
    ap.add_argument("--agent-model", default=None, help="default: the orchestrator's model")
    ap.add_argument("--judge", action=argparse.BooleanOptionalAction, default=False, help="run the listwise judge")
    ap.add_argument("--until", default=None, help="stop starting new steps after this local time (HH:MM)")
    ap.add_argument("--tables-only", action="store_true")
    args = ap.parse_args()
    if args.tables_only:
        print(summarize(args))
        return
    out = ROOT / slug(args.task)
    out.mkdir(parents=True, exist_ok=True)
    done_path = out / "bon" / RESULTS_FILE
    reached = read_results(done_path).questions if done_path.exists() else 0
    deadline = deadline_of(args)
    log_path = out / "throughput.json"
    steps = json.loads(log_path.read_text()) if log_path.exists() else []
    orch, agents = open_models(args)
    try:
        ref = asyncio.run(reference_decode(orch, args.orchestrator_model))
        if agents is not None:
            ref += asyncio.run(reference_decode(agents, args.agent_model))
        while reached < args.test_questions:
            if deadline is not None and time.time() > deadline:
                print("time limit reached; re-run the same command to continue", flush=True)
                break
            target = min(args.test_questions, reached + args.step)
            windows, start = RolloutWindows(orch), time.perf_counter()
            extra = {"agent_llm": agents} if agents is not None else {}
            task = load_task(args.task)
            result = asyncio.run(arun_loop(task, orch, out, config_for(args, target), on_event=windows, **extra))
            windows.close()
            wall = time.perf_counter() - start
            write_reports(result.bon.results, out / "bon")
            rate = windows.tokens / windows.seconds if windows.seconds > 1 else None
            steps.append(
                {
                    "questions": target,
                    "wall_s": round(wall, 1),
                    "rollout_s": round(windows.seconds, 1),
                    "decoded_tokens": windows.tokens,
                    "decode_tok_s": rate and round(rate, 2),
                    "reference_tok_s": round(ref, 2),
                    "parallel_questions": args.parallel_questions,
                }
            )
            log_path.write_text(json.dumps(steps, indent=1) + "\n")
            acc = {m: round(100 * (v.accuracy.value or 0), 1) for m, v in result.bon.results.methods.items()}
            print(
                f"[{time.strftime('%H:%M:%S')}] {target} held-out questions in {wall:.0f}s "
                f"(rollouts {windows.seconds:.0f}s at {rate or 0:.1f} decode tok/s): {acc}",
                flush=True,
            )
            reached = target
            summarize(args)
    finally:
        orch.close()
        if agents is not None:
            agents.close()
    print(summarize(args))


if __name__ == "__main__":
    main()
