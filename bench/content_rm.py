"""Does an RM learn to read plans from counterfactual pairs? Arms of pair sources, RM seeds, one held-out set.

    python bench/content_rm.py                                   # arms base and counterfactual, RM seeds 0 1
    python bench/content_rm.py --arms base --seeds 0             # one arm, one seed
    python bench/content_rm.py --tables-only                     # summaries from the committed rows

Reads the committed orchestration run (bench/results/orchestration/<task>/: its training traces, the held-out
traces at N = 8) and, for the `counterfactual` arm, the edits of its training plans collected by

    orchrm counterfactual --run bench/results/orchestration/mix_world_qa+chain_sum/train \\
        --out bench/results/content_rm/counterfactual --edits-per-plan 1

For each arm (`base`: the loop's own pair sources; `counterfactual`: the same plus the edits' pairs) and each
RM seed it builds the pairs, trains the run's RM (its loop.json settings, that seed), scores every held-out
plan, and evaluates every selector on the same plans as best-of-N does: accuracy of rm and of each content-blind
selector (`prior`, `kind-prior`, `router`, `shortest`, fitted on the same training traces), rm − best
content-blind and rm − shape-mean, and the content measures (`orchrm.bon.content`: headroom, same-shape pairs,
rm's same-shape AUC on pairs where neither plan copies the prompt's examples). Within one RM (a row) the
intervals are the bootstrap over questions. Across RM seeds they come from `orchrm.bon.stats.across_runs`, one
run per RM seed: a seed's overall level is the same on every question, so only the spread between the seeds'
run means can show it (a t quantile of seeds − 1 degrees of freedom), plus which questions were drawn. An arm's
rm accuracy: t over its seeds. rm − a content-blind selector or shape-mean: paired by seed from 2 seeds, since
both columns come from one RM run (the content-blind selectors have no RM seed at all). One arm − base: two
RMs trained apart, paired only where they share >= 3 seeds (`across_runs`' rule), Welch's t otherwise. The
same-shape AUC across seeds: only each seed's AUC is recorded, so its interval has no question term. One seed:
no interval. Each (arm, seed) is written to bench/results/content_rm.json as it finishes; a rerun skips what is
there; `--tables-only` recomputes the summaries from the committed rows (no training). The RMs are saved under
bench/results/content_rm/rm/ (not committed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from functools import cache
from pathlib import Path
from typing import Any

from files import write_text_atomic
from orchrm import PairConfig, RewardModel, build_pairs, read_traces, train_reward_model
from orchrm.bon import (
    METHODS,
    Case,
    ContentBlind,
    Context,
    RunInfo,
    across_runs,
    build_cases,
    compare,
    compute_results,
    equivalence,
    reading,
    score_plans,
)
from orchrm.loop import LoopConfig, read_loop_config
from orchrm.mas import first_plans, locate_traces, run_questions, run_traces
from orchrm.pairs import load_counterfactual, render_question
from orchrm.rm import CARD_FILE, data_hash, kept_plan_chars
from orchrm.tasks import load_task
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

HERE = Path(__file__).parent
RUN = HERE / "results" / "orchestration" / "mix_world_qa+chain_sum"
CF = HERE / "results" / "content_rm" / "counterfactual"
OUT = HERE / "results" / "content_rm.json"
RMS = HERE / "results" / "content_rm" / "rm"
BLIND = ("shortest", "prior", "kind-prior", "router")


@cache
def load_run(run: Path) -> tuple[LoopConfig, list, dict, list[str]]:
    """The run's settings, training traces, held-out plans by question and held-out ids (read once a process)."""
    config = read_loop_config(run)
    task = load_task(config.task)
    train_ids = [q.id for q in run_questions(task, config.train_questions, "train", config.seed)]
    train = run_traces(read_traces(locate_traces(run / "train")), train_ids, config.n_plans)
    held_ids = [q.id for q in run_questions(task, config.test_questions, "test", config.seed)]
    grouped = first_plans(read_traces(locate_traces(run / "bon" / "heldout")), held_ids, config.n_plans)
    return config, train, {q: ts for q, ts in grouped.items() if ts}, held_ids


def one(arm: str, seed: int, cf_dir: Path) -> dict[str, Any]:
    """Build the arm's pairs, train its RM with this seed (saved under RMS), and measure it."""
    config, train, _, _ = load_run(RUN)
    edits = load_counterfactual(cf_dir) if arm != "base" else ()
    sources = PairConfig().sources if arm != "base" else tuple(s for s in PairConfig().sources if s != "counterfactual")
    pairs = build_pairs(train, PairConfig(seed=config.seed, sources=sources), counterfactual=edits)
    stats = json.loads(pairs.stats.model_dump_json())
    folder = RMS / f"{arm}-{seed}"
    rm_config = config.rm.model_copy(update={"seed": seed})
    train_s = None  # a run killed after training kept its RM: reused, not trained twice (its time unknown)
    if not _trained_on(folder, pairs.train, seed):
        start = time.perf_counter()
        result = train_reward_model(pairs.train, pairs.val, rm_config, pair_stats=stats, progress=False)
        result.model.save(folder)
        train_s = round(time.perf_counter() - start, 1)
    row = {
        "arm": arm,
        "seed": seed,
        "pairs": {s: c["train"] + c["val"] for s, c in stats["per_source"].items()},
        "train_pairs": len(pairs.train),
        "train_s": train_s,
        "edits": stats.get("edits"),
        "counterfactual_dir": str(cf_dir.resolve().relative_to(HERE.parent.resolve())) if arm != "base" else None,
        "counterfactual_cap": PairConfig().max_counterfactual_per_question if arm != "base" else None,
    }
    return row | measure(RewardModel.load(folder))


def _trained_on(folder: Path, train: list, seed: int) -> bool:
    """Whether `folder` holds an RM trained with `seed` on exactly these training pairs."""
    if not (folder / CARD_FILE).is_file():
        return False
    card = RewardModel.load(folder).card
    return card.training_data_sha256 == data_hash(train) and card.config.seed == seed


def evaluate(rm: RewardModel, run: Path) -> tuple[list[Case], dict[str, Any]]:
    """A run's held-out cases with this RM's rewards, and every selector on them as `orchrm bon` computes it."""
    config, train, grouped, held_ids = load_run(run)
    rewards, rm_s, rm_tokens = score_plans(rm, grouped)
    blind = ContentBlind.fit(train, strength=config.bon.prior_strength, exclude=held_ids)
    cases = build_cases(grouped, rewards, rm_s, blind, rm_tokens)
    return cases, compute_results(cases, config.bon, [], meta=RunInfo(task=config.task)).dump()


def measure(rm: RewardModel) -> dict[str, Any]:
    """Every selector on the held-out plans with this RM's rewards; the content measures; truncation."""
    cases, results = evaluate(rm, RUN)
    grouped = load_run(RUN)[2]
    return {
        "accuracy": {m: v["accuracy"] for m, v in results["methods"].items()},
        "rm_minus": {k[9:]: v for k, v in results["marks"].items() if k.startswith("rm_minus_")},
        "best_content_blind": results["marks"].get("best_content_blind"),
        "content": results["content"],
        "auc": results["auc"],
        "rm_correct": [_pick(case, "rm") for case in cases],
        "shape_mean_correct": [_pick(case, "shape-mean") for case in cases],
        "blind_correct": {m: [_pick(case, m) for case in cases] for m in BLIND},
        "questions": len(cases),
        "truncation": truncation(rm, grouped),
        "stamp": stamp(),
    }


def truncation(rm: RewardModel, grouped: dict) -> dict[str, Any]:
    """Held-out valid plans the RM reads cut at its max length: any cut, a cut reference, a cut final agent."""
    decoder = rm.card.backbone_kind == "decoder"
    plans = cut = refs = final = 0
    for ts in grouped.values():
        prompt = render_question(ts[0].question)
        for t in ts:
            if not t.valid or t.plan is None:
                continue
            text = rm.render(t.plan)  # the rendering the RM was trained on
            kept = kept_plan_chars(rm.tokenizer, prompt, text, rm.card.max_length, decoder=decoder)
            plans += 1
            if kept < len(text):
                cut += 1
                refs += "${" in text[kept:]
                final += any(_line_end(text, f"\n- {s} [") > kept for s in t.plan.sinks())
    return {
        "max_length": rm.card.max_length,
        "plans": plans,
        "cut": cut,
        "cut_reference": refs,
        "cut_final_agent": final,
    }


def _line_end(text: str, head: str) -> int:
    """Where the line that starts with `head` ends (-1 when there is none)."""
    start = text.find(head)
    if start < 0:
        return -1
    end = text.find("\n", start + 1)
    return len(text) if end < 0 else end


def _pick(case: Any, method: str) -> float:
    return METHODS[method].run(case, Context()).correct


def pooled(rows: list[dict[str, Any]], arm: str) -> dict[str, Any] | None:
    """The arm's rm accuracy across its RM seeds, and rm against the best content-blind selector and shape-mean,
    each difference paired by seed (one RM run holds both columns)."""
    runs = [r for r in rows if r["arm"] == arm]
    if not runs:
        return None
    seeds = [r["seed"] for r in runs]
    rm = [r["rm_correct"] for r in runs]
    blind = blind_columns(runs)
    best = max(blind, key=lambda m: statistics.fmean(blind[m]))
    return {
        "seeds": seeds,
        "rm": across_runs(rm, seeds=seeds).model_dump(),
        "best_content_blind": best,
        "rm_minus_best_content_blind": within_runs(rm, [blind[best]] * len(runs), seeds),
        "rm_minus_shape_mean": within_runs(rm, [r["shape_mean_correct"] for r in runs], seeds)
        if all("shape_mean_correct" in r for r in runs)
        else None,
        "same_shape_auc_rm": [r["content"]["auc"]["rm"] for r in runs],  # each seed's, bootstrap over questions
        "headroom": runs[0]["content"]["headroom"],
        "clean_pairs": runs[0]["content"]["clean_pairs"],
    }


def blind_columns(runs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """The content-blind selectors' correctness per question: fitted on the training traces, not on the RM, so
    the same for every RM seed (picks that differ are a mistake, not an outcome)."""
    blind = {m: runs[0]["blind_correct"][m] for m in BLIND}
    if any(r["blind_correct"][m] != blind[m] for r in runs for m in BLIND):
        raise ValueError("the content-blind selectors' picks differ between RM seeds")
    return blind


def within_runs(rm: list[list[float]], other: list[list[float]], seeds: list[int]) -> dict[str, Any]:
    """rm − another selector scored in the same RM runs, per seed: `across_runs` paired by seed from 2 seeds."""
    iv = across_runs(rm, other, seeds=seeds, seeds_minus=seeds, min_pairs=2)
    eq = equivalence(rm, other, seeds=seeds, seeds_minus=seeds, min_pairs=2)
    return {"points": iv.model_dump(), "equivalence": eq.model_dump(), "reading": reading(iv, eq)}


def arm_names(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["arm"] for r in rows))


def arm_difference(rows: list[dict[str, Any]], arm: str) -> dict[str, Any] | None:
    """rm(arm) − rm(base) across RM seeds, and the same for rm's same-shape AUC (each seed's AUC one run on one
    column: no question term), by `orchrm.bon.stats.compare`: paired by seed where both arms ran >= 3 of the
    same seeds, Welch's t otherwise."""
    arms = {a: [r for r in rows if r["arm"] == a] for a in (arm, "base")}
    if not all(arms.values()):
        return None
    seeds = {a: [r["seed"] for r in rs] for a, rs in arms.items()}

    def across(columns: dict[str, list[list[float]]]) -> dict[str, Any]:
        c = compare(columns[arm], columns["base"], seeds=seeds[arm], seeds_minus=seeds["base"])
        return {"points": c.interval.model_dump(), "equivalence": c.equivalence.model_dump(), "reading": c.reading}

    auc = {a: [[r["content"]["auc"]["rm"]["value"]] for r in rs] for a, rs in arms.items()}
    return {
        "seeds": [seeds[arm], seeds["base"]],
        "accuracy": across({a: [r["rm_correct"] for r in rs] for a, rs in arms.items()}),
        "same_shape_auc": {
            "base": statistics.fmean(x for (x,) in auc["base"]),
            arm: statistics.fmean(x for (x,) in auc[arm]),
            "question_term": False,
            **across(auc),
        },
    }


METHOD_NOTE = (
    "Across RM seeds: orchrm.bon.stats.across_runs, one run per RM seed (t over the seeds' run means plus "
    "which questions were drawn, Satterthwaite df). rm − a selector of the same RM runs: paired by seed from 2 "
    "seeds. arm − base: paired where both ran >= 3 of the same seeds, Welch's t otherwise. same-shape AUC: "
    "each seed's AUC alone (no question term). One seed: no interval. TOST against ±5 points."
)


def summaries(data: dict[str, Any]) -> None:
    """Each arm across its seeds, and each arm against base."""
    data["method"] = METHOD_NOTE
    data["pooled"] = {a: pooled(data["rows"], a) for a in arm_names(data["rows"])}
    data["minus_base"] = {a: arm_difference(data["rows"], a) for a in arm_names(data["rows"]) if a != "base"}
    data.pop("counterfactual_minus_base", None)  # the one-arm form of `minus_base`


def read() -> dict[str, Any]:
    return json.loads(OUT.read_text()) if OUT.exists() else {"run": str(RUN.relative_to(HERE.parent)), "rows": []}


def show(data: dict[str, Any]) -> str:
    lines = [_row_line(r) for r in data["rows"]]
    for r in data["rows"][:1]:
        if "truncation" in r:
            t = r["truncation"]
            lines.append(
                f"truncation at {t['max_length']} tokens: {t['cut']} of {t['plans']} held-out valid plans "
                f"cut; {t['cut_reference']} lose a reference, {t['cut_final_agent']} their final agent's "
                "input"
            )
    if data.get("method"):
        lines.append(data["method"])
    for arm, p in data.get("pooled", {}).items():
        if p:
            sm = _diff(p["rm_minus_shape_mean"]) if p.get("rm_minus_shape_mean") else "n/a"
            lines.append(
                f"{arm} across RM seeds {p['seeds']}: rm {_iv(p['rm'])} ({_how(p['rm'])}); "
                f"rm − {p['best_content_blind']} {_diff(p['rm_minus_best_content_blind'])}; "
                f"rm − shape-mean {sm}"
            )
    for arm, d in data.get("minus_base", {}).items():
        if d:
            a = d["same_shape_auc"]
            lines.append(
                f"{arm} − base, RM seeds {d['seeds'][0]} and {d['seeds'][1]}: rm accuracy "
                f"{_diff(d['accuracy'])}; same-shape AUC {a['base']:.3f} → {a[arm]:.3f}, ×100 {_diff(a)}, "
                "no question term"
            )
    return "\n".join(lines)


def _row_line(r: dict[str, Any]) -> str:
    """One (arm, seed): its pairs and training time, rm and the best content-blind selector, within-RM bootstraps."""
    auc, best = r["content"]["auc"]["rm"], r["best_content_blind"]
    train_s = "?" if r["train_s"] is None else round(r["train_s"])
    return (
        f"{r['arm']:<15} seed {r['seed']}: pairs {r['pairs']} (train {r['train_pairs']}, {train_s} s); "
        f"rm {100 * r['accuracy']['rm']['value']:.1f}; best content-blind {best} "
        f"{100 * r['accuracy'][best]['value']:.1f}; rm − it {_iv(r['rm_minus']['best_content_blind'])}; "
        f"rm − shape-mean {_iv(r['rm_minus']['shape-mean'])}; same-shape AUC {auc['value']:.3f} "
        f"[{auc['low']:.3f}, {auc['high']:.3f}] on {auc['n_pairs']} pairs"
    )


def _iv(d: dict[str, Any]) -> str:
    if d.get("low") is None or d.get("high") is None:
        return f"{100 * d['value']:+.1f}, no interval"
    return f"{100 * d['value']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]"


def _how(d: dict[str, Any]) -> str:
    """How an `across_runs` interval was made: its method and degrees of freedom, or why there is none."""
    if d.get("method") is None or d.get("df") is None:
        return "fewer than two runs"
    return f"{d['method']}, {len(d['run_means'])} runs, df {d['df']:.1f}"


def _diff(d: dict[str, Any]) -> str:
    return f"{_iv(d['points'])} points ({_how(d['points'])}): {d['reading']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--arms",
        default="base,counterfactual",
        help="Arm names: base (the loop's sources), any other name adds the --counterfactual folder's pairs.",
    )
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--counterfactual", type=Path, default=CF)
    ap.add_argument("--tables-only", action="store_true", help="No training: the summaries from the committed rows.")
    args = ap.parse_args()
    data = read()
    if not args.tables_only:
        for arm in args.arms.split(","):
            for seed in args.seeds:
                if any(r["arm"] == arm and r["seed"] == seed for r in data["rows"]):
                    continue
                data["rows"].append(one(arm, seed, args.counterfactual))
                summaries(data)
                write_text_atomic(OUT, json.dumps(data, indent=1) + "\n")
                print(show({"rows": data["rows"][-1:]}), flush=True)
        for row in data["rows"]:  # rows measured before a measure was added: again, from their saved RM
            folder = RMS / f"{row['arm']}-{row['seed']}"
            if ("shape_mean_correct" not in row or "truncation" not in row) and folder.exists():
                row.update(measure(RewardModel.load(folder)))
                summaries(data)
                write_text_atomic(OUT, json.dumps(data, indent=1) + "\n")
    summaries(data)  # --tables-only: from the committed rows alone
    if data["rows"]:
        write_text_atomic(OUT, json.dumps(data, indent=1) + "\n")
    print(show(data))


if __name__ == "__main__":
    main()
