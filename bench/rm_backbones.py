"""Reward-model backbones compared on the same pairs: the embedded MiniLM encoder against the embedded Qwen
decoder (LoRA + a value head), both trained on the committed pairs of the orchestration run
(bench/results/orchestration/mix_world_qa+chain_sum/pairs), both measured on

- held-out pairwise accuracy, overall and per source, on the run's validation pairs (bootstrap over their
  questions; ties count as wrong), beside two rules fitted on the same training pairs that could fake it
  (`bench/rm.py`'s plan length and agent-type prior; half credit for a tie);
- within-question AUC and best-of-N accuracy at N = 8 on the run's held-out best-of-N plans (each question's
  8 plans already executed and graded; each RM only rescores them), computed by `orchrm.bon` exactly as the
  run computed its own, beside `shortest` and `prior`;
- paired differences, decoder minus encoder, over the same questions.

    python bench/rm_backbones.py                        # both backbones, then the comparison
    python bench/rm_backbones.py --limit 8 --epochs 1 --max-length 64 --backbones all-minilm-l6-v2 DIR

Resumable: a backbone whose trained folder exists is loaded (verified), not retrained, and scores already in
the results file for the same weights are reused. The MiniLM is trained with the run's own RM settings
(loop.json), so its best-of-N results should reproduce the committed ones; the decoder with its defaults
(`orchrm.rm.config.DECODER_DEFAULTS`). Trained folders go under bench/results/rm_backbones/ (not committed);
results to bench/results/rm_backbones.json, rewritten after each backbone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchrm import Trace, read_traces
from orchrm.bon import (
    METHODS,
    Bootstrap,
    Case,
    ContentBlind,
    RunInfo,
    ShapePrior,
    build_cases,
    compute_results,
    per_question_rows,
    question_auc,
    read_per_question,
    read_results,
    score_plans,
)
from orchrm.loop import LoopConfig, read_loop_config
from orchrm.mas import first_plans, locate_traces
from orchrm.pairs import STATS_FILE, PairRow, read_pairs_dir
from orchrm.rm import RewardModel, RMConfig, backbone_kind, data_hash, train_reward_model
from rm import agent_type_baseline, length_baseline
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

HERE = Path(__file__).parent / "results"
RUN = HERE / "orchestration" / "mix_world_qa+chain_sum"
OUT = HERE / "rm_backbones.json"
MODELS = HERE / "rm_backbones"
BACKBONES = ["all-minilm-l6-v2", "qwen2.5-coder-0.5b"]


@dataclass
class Data:
    """What every backbone is trained and measured on."""

    loop: LoopConfig
    train: list[PairRow]
    val: list[PairRow]
    stats: dict[str, Any]
    grouped: dict[str, list[Trace]]  # held-out best-of-N plans per question, in plan order
    prior: ShapePrior
    committed: dict[str, Any]  # the run's own bon/results.json


def load_data(run: Path, limit: int | None) -> Data:
    loop = read_loop_config(run)
    train, val = read_pairs_dir(run / "pairs")
    rows = read_per_question(run / "bon")
    qids = [r["question_id"] for r in rows][:limit]
    grouped = first_plans(read_traces(locate_traces(run / "bon" / "heldout")), qids, loop.n_plans)
    prior = ShapePrior.from_file(run / "train", strength=loop.bon.prior_strength, exclude=qids)
    return Data(
        loop=loop,
        train=train[:limit],
        val=val[:limit],
        stats=json.loads((run / "pairs" / STATS_FILE).read_text()),
        grouped=grouped,
        prior=prior,
        committed=read_results(run / "bon").dump(),
    )


def config_for(backbone: str, data: Data, args: argparse.Namespace) -> RMConfig:
    """The run's own RM settings for an encoder; the decoder defaults for a decoder; --epochs, --max-length
    over either."""
    given = {k: v for k, v in (("epochs", args.epochs), ("max_length", args.max_length)) if v is not None}
    if backbone_kind(backbone) == "encoder":
        return RMConfig.model_validate({**data.loop.rm.model_dump(), "backbone": backbone, **given})
    return RMConfig(backbone=backbone, **given)


def trained(
    backbone: str, config: RMConfig, data: Data, folder: Path, before: dict[str, Any]
) -> tuple[RewardModel, dict]:
    """The backbone's RM: loaded when its folder exists (and was trained on these pairs with these settings),
    else trained and saved. Returns the model and what training took."""
    if folder.exists():
        rm = RewardModel.load(folder)
        if rm.card.training_data_sha256 != data_hash(data.train) or rm.card.config.model_dump() != config.model_dump():
            sys.exit(f"{folder} was trained on other pairs or settings; delete it or pass another --models")
        print(f"{backbone}: reusing {folder}", flush=True)
        return rm, before.get("training", {"seconds": None, "note": "trained in an earlier sitting"})
    print(
        f"{backbone}: training on {len(data.train)} pairs ({config.epochs} epochs, batch {config.batch_size}, "
        f"max_length {config.max_length}, lr {config.learning_rate})",
        flush=True,
    )
    result = train_reward_model(data.train, data.val, config, pair_stats=data.stats)
    result.model.save(folder)
    info = {
        "seconds": round(result.train_seconds, 1),
        "pairs_per_second": round(result.pairs_per_second, 3),
        "best_epoch": result.best_epoch,
        "history": [h.__dict__ for h in result.history],
    }
    return RewardModel.load(folder), info  # scored as the saved folder loads, after its round trip


def scores(rm: RewardModel, data: Data, before: dict[str, Any]) -> dict[str, Any]:
    """The RM's rewards on the validation pairs and on every held-out best-of-N plan (reused when the results
    file holds them for these very weights and items)."""
    old = before.get("scores") or {}
    if (
        old.get("weights_sha256") == rm.card.weights_sha256
        and len(old.get("val_chosen", [])) == len(data.val)
        and set(old.get("bon_rewards", {})) == set(data.grouped)
    ):
        return old
    start = time.perf_counter()
    chosen = rm.score_rendered([(r.prompt, r.chosen) for r in data.val])
    rejected = rm.score_rendered([(r.prompt, r.rejected) for r in data.val])
    val_s = time.perf_counter() - start
    rewards, rm_s, _ = score_plans(rm, data.grouped)
    return {
        "weights_sha256": rm.card.weights_sha256,
        "val_chosen": chosen,
        "val_rejected": rejected,
        "bon_rewards": rewards,
        "bon_rm_s": rm_s,
        "seconds": {
            "val_pairs": round(val_s, 1),
            "bon_plans": round(sum(rm_s.values()), 1),
            "plans_per_second": round(sum(map(len, rewards.values())) / max(sum(rm_s.values()), 1e-9), 2),
        },
    }


def pair_accuracy(val: list[PairRow], credit: list[float], resamples: int, seed: int) -> dict[str, Any]:
    """Pooled accuracy (credit per pair) overall and per source, each with a bootstrap interval over the
    validation questions (the pairs of one question are not independent)."""
    qids = sorted({r.question_id for r in val})
    at = {q: i for i, q in enumerate(qids)}
    boot = Bootstrap(len(qids), resamples, seed)
    out: dict[str, Any] = {}
    for source in ["overall", *sorted({r.source for r in val})]:
        wins, n = [0.0] * len(qids), [0.0] * len(qids)
        for r, c in zip(val, credit, strict=True):
            if source in ("overall", r.source):
                wins[at[r.question_id]] += c
                n[at[r.question_id]] += 1
        out[source] = {**boot.ratio(wins, n).model_dump(), "pairs": int(sum(n))}
    return out


def bon_results(data: Data, s: dict[str, Any]) -> tuple[dict[str, Any], list[Case]]:
    """Every best-of-N method and AUC with the RM's rewards, as `orchrm bon` computes them (no judge)."""
    cases = build_cases(data.grouped, s["bon_rewards"], s["bon_rm_s"], ContentBlind(data.prior))
    config = data.loop.bon.model_copy(update={"judge": False})
    r = compute_results(cases, config, [], meta=RunInfo(task=data.loop.task, prior=data.prior.summary())).dump()
    summary = {
        "questions": r["questions"],
        "n": r["n"],
        "accuracy": {m: v["accuracy"] for m, v in r["methods"].items()},
        "auc": r["auc"],
        "rm_minus": {k.removeprefix("rm_minus_"): v for k, v in r["marks"].items() if k.startswith("rm_minus_")},
        "gap_closed_random_to_oracle": r["marks"]["gap_closed_random_to_oracle"],
    }
    return summary, cases


def reproduces(summary: dict[str, Any], committed: dict[str, Any]) -> dict[str, bool]:
    """Whether the retrained RM's best-of-N accuracy and AUC are the committed run's (same pairs, settings, seed)."""
    same = lambda a, b: a is not None and b is not None and abs(a - b) < 1e-9  # noqa: E731
    return {
        "rm_accuracy": same(summary["accuracy"]["rm"]["value"], committed["methods"]["rm"]["accuracy"]["value"]),
        "rm_auc": same(summary["auc"]["rm"]["value"], committed["auc"]["rm"]["value"]),
    }


def measure(backbone: str, data: Data, args: argparse.Namespace, before: dict[str, Any]) -> tuple[dict, list[Case]]:
    config = config_for(backbone, data, args)
    folder = args.models / (Path(backbone).name if Path(backbone).exists() else backbone)
    rm, training = trained(backbone, config, data, folder, before)
    s = scores(rm, data, before)
    credit = [float(c > r) for c, r in zip(s["val_chosen"], s["val_rejected"], strict=True)]
    summary, cases = bon_results(data, s)
    entry = {
        "kind": rm.card.backbone_kind,
        "folder": str(folder),
        "backbone": rm.card.backbone,
        "backbone_sha256": rm.card.backbone_sha256,
        "weights_sha256": rm.card.weights_sha256,
        "config": config.model_dump(),
        "training": training,
        "val_accuracy_in_training": rm.card.metrics.get("val_accuracy"),
        "pairwise_accuracy": pair_accuracy(data.val, credit, data.loop.bon.resamples, data.loop.bon.seed),
        "bon": summary,
        "scoring_seconds": s["seconds"],
        "scores": s,
    }
    if args.limit is None and config.model_dump() == data.loop.rm.model_dump():  # the run's own RM, retrained
        entry["reproduces_committed"] = reproduces(summary, data.committed)
    return entry, cases


def baselines(data: Data) -> dict[str, Any]:
    """Pairwise accuracy of the cheapest rules that could fake the RM's, fitted on the same training pairs."""
    out = {}
    direction, by_length = length_baseline(data.train)
    _, by_type = agent_type_baseline(data.train)
    for name, prefer in ((f"length ({direction} wins)", by_length), ("agent-type prior", by_type)):
        credit = [1.0 if p > 0 else 0.5 if p == 0 else 0.0 for p in map(prefer, data.val)]
        out[name] = pair_accuracy(data.val, credit, data.loop.bon.resamples, data.loop.bon.seed)
    return out


def compare(
    a: dict[str, Any], b: dict[str, Any], cases_a: list[Case], cases_b: list[Case], data: Data
) -> dict[str, Any]:
    """b minus a, paired: pairwise accuracy over the validation questions, best-of-N accuracy and AUC over
    the held-out questions."""
    res, seed = data.loop.bon.resamples, data.loop.bon.seed
    qids = sorted({r.question_id for r in data.val})
    at = {q: i for i, q in enumerate(qids)}
    wins_a, wins_b, n = [0.0] * len(qids), [0.0] * len(qids), [0.0] * len(qids)
    for i, r in enumerate(data.val):
        wins_a[at[r.question_id]] += a["scores"]["val_chosen"][i] > a["scores"]["val_rejected"][i]
        wins_b[at[r.question_id]] += b["scores"]["val_chosen"][i] > b["scores"]["val_rejected"][i]
        n[at[r.question_id]] += 1
    pooled = lambda x, y, m: (y.sum(axis=1) - x.sum(axis=1)) / m.sum(axis=1)  # noqa: E731
    config = data.loop.bon.model_copy(update={"judge": False})
    correct = [[row["rm"]["correct"] for row in per_question_rows(c, config, [])] for c in (cases_a, cases_b)]
    rank = METHODS["rm"].score
    aucs = [(question_auc(x, rank), question_auc(y, rank)) for x, y in zip(cases_a, cases_b, strict=True)]
    aucs = [(x, y) for x, y in aucs if x is not None and y is not None]
    return {
        "pairwise_accuracy": Bootstrap(len(qids), res, seed).interval(pooled, wins_a, wins_b, n).model_dump(),
        "bon_rm_accuracy": Bootstrap(len(cases_a), res, seed).diff(correct[1], correct[0]).model_dump(),
        "auc": {
            **Bootstrap(len(aucs), res, seed).diff([y for _, y in aucs], [x for x, _ in aucs]).model_dump(),
            "n_questions": len(aucs),
        },
    }


def iv(d: dict[str, Any] | None, scale: float = 100.0, digits: int = 1) -> str:
    if not d or d.get("value") is None:
        return "n/a"
    if d.get("low") is None:
        return f"{d['value'] * scale:.{digits}f}"
    return f"{d['value'] * scale:.{digits}f} [{d['low'] * scale:.{digits}f}, {d['high'] * scale:.{digits}f}]"


def show(report: dict[str, Any]) -> str:
    lines = [
        f"{report['pairs']['val']} validation pairs ({report['pairs']['val_questions']} questions); "
        f"best-of-{report['bon_n']} on {report['bon_questions']} held-out questions"
    ]
    rows = {
        **report["backbones"],
        **{f"baseline: {k}": {"pairwise_accuracy": v} for k, v in report["baselines"].items()},
    }
    for name, e in rows.items():
        acc = e["pairwise_accuracy"]
        per = ", ".join(f"{k} {iv(v)} (n={v['pairs']})" for k, v in acc.items() if k != "overall")
        lines.append(f"{name}: pairwise accuracy % {iv(acc['overall'])}; {per}")
        if "bon" in e:
            b = e["bon"]
            lines.append(
                f"    best-of-N rm accuracy % {iv(b['accuracy']['rm'])} (random {iv(b['accuracy']['random'])}, "
                f"shortest {iv(b['accuracy']['shortest'])}, prior {iv(b['accuracy'].get('prior'))}, "
                f"oracle {iv(b['accuracy']['oracle'])}); AUC rm {iv(b['auc']['rm'], 1, 3)}, "
                f"shortest {iv(b['auc']['shortest'], 1, 3)}, prior {iv(b['auc'].get('prior'), 1, 3)}"
            )
            lines.append(
                f"    training {e['training'].get('seconds')} s; scoring {e['scoring_seconds']}"
                + (f"; reproduces committed: {e['reproduces_committed']}" if "reproduces_committed" in e else "")
            )
    for name, c in report.get("comparison", {}).items():
        lines.append(
            f"{name}: pairwise accuracy {iv(c['pairwise_accuracy'])} points; best-of-N "
            f"{iv(c['bon_rm_accuracy'])} points; AUC {iv(c['auc'], 1, 3)} ({c['auc']['n_questions']} questions)"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbones", nargs="+", default=BACKBONES, help="encoder and decoder names or folders")
    parser.add_argument("--run", type=Path, default=RUN, help="orchestration run folder (pairs/, bon/, train/)")
    parser.add_argument("--limit", type=int, help="smoke run: the first N train and val pairs and held-out questions")
    parser.add_argument("--epochs", type=int, help="override every backbone's epochs")
    parser.add_argument("--max-length", type=int, help="override every backbone's max_length")
    parser.add_argument("--models", type=Path, help=f"trained folders (default {MODELS}, or a limit-N folder in it)")
    parser.add_argument("--out", type=Path, help=f"results file (default {OUT}; with --limit, beside the models)")
    args = parser.parse_args()
    args.models = args.models or (MODELS if args.limit is None else MODELS / f"limit-{args.limit}")
    args.out = args.out or (OUT if args.limit is None else args.models / "results.json")
    data = load_data(args.run, args.limit)
    before = json.loads(args.out.read_text()) if args.out.is_file() else {}
    report = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_average_at_start": os.getloadavg()},
        "run": str(args.run),
        "limit": args.limit,
        "pairs": {
            "train": len(data.train),
            "val": len(data.val),
            "val_questions": len({r.question_id for r in data.val}),
        },
        "bon_questions": len(data.grouped),
        "bon_n": data.loop.n_plans,
        "baselines": baselines(data),
        "backbones": {},
        "comparison": {},
    }
    cases = {}
    for backbone in args.backbones:
        entry, cases[backbone] = measure(backbone, data, args, before.get("backbones", {}).get(backbone, {}))
        report["backbones"][backbone] = entry
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({**report, "stamp": stamp()}, indent=2) + "\n")  # kept whole after each backbone
    kinds = {b: report["backbones"][b]["kind"] for b in args.backbones}
    for enc in [b for b in args.backbones if kinds[b] == "encoder"]:
        for dec in [b for b in args.backbones if kinds[b] == "decoder"]:
            a, b = report["backbones"][enc], report["backbones"][dec]
            report["comparison"][f"{dec} minus {enc}"] = compare(a, b, cases[enc], cases[dec], data)
    args.out.write_text(json.dumps({**report, "stamp": stamp()}, indent=2) + "\n")
    print(show(report))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
