"""Every selection method's results from the cases and the judgments: accuracy with bootstrap intervals,
tokens per category, curves over N, the rm-adaptive sweep, within-question AUC, per-kind accuracy and the
marks that hold `rm` to its baselines. Pure: no model, no file."""

from __future__ import annotations

import math
import statistics
from typing import Any

from ..errors import ConfigError
from .auc import within_question_auc
from .bootstrap import Bootstrap, Interval
from .candidates import CATEGORIES, Case, Outcome
from .config import BonConfig
from .content import content_stats
from .judge import JudgeRecord
from .results import Auc, BonResults, CurvePoint, MethodSummary, RunInfo, SweepPoint, TemplateGroup
from .selection import CONTENT_BLIND, HYBRID, METHODS, TRIVIAL, Context
from .selectors import select_adaptive

CURVE_NS = (1, 2, 4, 8, 16)
Judgments = dict[tuple[str, int], JudgeRecord]


def plans_per_question(cases: list[Case]) -> int:
    """N: the plans each question holds (the held-out rollout's `n_plans`, read from the plans themselves); a set
    of cases with unequal counts is a mistake of the caller, refused."""
    counts = {len(c.candidates) for c in cases}
    if len(counts) > 1:
        raise ConfigError(f"best-of-N needs the same number of plans for every question, got {sorted(counts)}")
    return counts.pop() if counts else 0


def _with_judge(case: Case, n: int, judgments: Judgments) -> Case:
    sub = case.prefix(n)
    j = judgments.get((case.question_id, n))
    if j is not None:
        sub.judge_best, sub.judge_tokens, sub.judge_s = j.best, j.prompt_tokens + j.completion_tokens, j.wall_s
        sub.judged = True
    return sub


def outcomes_at(
    cases: list[Case], n: int, config: BonConfig, scale: float, judgments: Judgments
) -> dict[str, list[Outcome]]:
    """Every applicable method's outcome per question when only the first n plans exist."""
    subs = [_with_judge(c, n, judgments) for c in cases]
    ctx = Context(tau=config.tau * scale, judge=config.judge and n in config.judged_ns(plans_per_question(cases)))
    return {name: [m.run(c, ctx) for c in subs] for name, m in METHODS.items() if m.available(subs, ctx)}


def per_kind(cases: list[Case], acc: dict[str, list[float]]) -> dict[str, dict[str, int | float]]:
    """Accuracy of every method per question kind ("unknown" for questions without one)."""
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(cases):
        groups.setdefault(c.kind or "unknown", []).append(i)
    return {
        kind: {**{m: statistics.fmean(xs[i] for i in idx) for m, xs in acc.items()}, "n": len(idx)}
        for kind, idx in sorted(groups.items())
    }


def by_template(
    cases: list[Case], full: dict[str, list[Outcome]], config: BonConfig
) -> dict[str, TemplateGroup] | None:
    """Accuracy and the content marks on held-out questions whose template training saw and on those whose
    template it never did (untemplated questions are in neither); None unless some template is unseen."""
    if not any(c.seen is False for c in cases):
        return None
    groups = {}
    for label, want in (("seen", True), ("unseen", False)):
        idx = [i for i, c in enumerate(cases) if c.seen is want]
        if not idx:
            continue
        acc = {m: [outs[i].correct for i in idx] for m, outs in full.items()}
        boot = Bootstrap(len(idx), config.resamples, config.seed)
        # only what says whether rm reads beyond routing: its edge over the best content-blind and shape-mean
        blind = best_of_marks(boot, acc, CONTENT_BLIND, "content_blind")
        group_marks = {k: v for k, v in blind.items() if k in ("best_content_blind", "rm_minus_best_content_blind")}
        if "shape-mean" in acc:
            group_marks["rm_minus_shape-mean"] = boot.diff(acc["rm"], acc["shape-mean"])
        if HYBRID in acc:
            best = str(group_marks["best_content_blind"])
            group_marks[f"{HYBRID}_minus_best_content_blind"] = boot.diff(acc[HYBRID], acc[best])
        groups[label] = TemplateGroup(
            questions=len(idx), accuracy={m: statistics.fmean(xs) for m, xs in acc.items()}, marks=group_marks
        )
    return groups


def best_of_marks(
    boot: Bootstrap, acc: dict[str, list[float]], group: tuple[str, ...], label: str
) -> dict[str, Interval | str]:
    """`rm` against each selector of `group` it has results for, and against the best of them by mean accuracy
    (`best_<label>` names it). The best is chosen on the very questions it is reported on, which flatters the
    baseline: rm − best is a conservative estimate of rm's edge."""
    present = [m for m in group if m in acc]
    marks: dict[str, Interval | str] = {f"rm_minus_{m}": boot.diff(acc["rm"], acc[m]) for m in present}
    if present:
        best = max(present, key=lambda m: statistics.fmean(acc[m]))  # ties go to the first listed
        marks[f"best_{label}"] = best
        marks[f"rm_minus_best_{label}"] = boot.diff(acc["rm"], acc[best])
    return marks


def marks(boot: Bootstrap, full: dict[str, list[Outcome]]) -> dict[str, Interval | str]:
    """rm against random, majority, the oracle gap, the judge and the trivial selectors; rm-adaptive against random."""
    acc = {m: [o.correct for o in full[m]] for m in full}
    tok = {m: [o.total_tokens for o in full[m]] for m in full}
    out: dict[str, Interval | str] = {
        "rm_minus_random": boot.diff(acc["rm"], acc["random"]),
        "rm_minus_majority": boot.diff(acc["rm"], acc["majority"]),
        "rm_tokens_over_majority": boot.ratio(tok["rm"], tok["majority"]),
        "gap_closed_random_to_oracle": boot.gap_closed(acc["rm"], acc["random"], acc["oracle"]),
        "rm_adaptive_minus_random": boot.diff(acc["rm-adaptive"], acc["random"]),
    }
    if "judge" in full:
        out["judge_tokens_over_rm"] = boot.ratio(tok["judge"], tok["rm"])
        out["rm_minus_judge"] = boot.diff(acc["rm"], acc["judge"])
    if "shape-mean" in acc:
        out["rm_minus_shape-mean"] = boot.diff(acc["rm"], acc["shape-mean"])
    out |= best_of_marks(boot, acc, TRIVIAL, "trivial") | best_of_marks(boot, acc, CONTENT_BLIND, "content_blind")
    if HYBRID in acc:  # what rm's reading adds once the shape is the prior's: the same plans, the same shape rule
        out[f"{HYBRID}_minus_kind-prior"] = boot.diff(acc[HYBRID], acc["kind-prior"])
        out[f"{HYBRID}_minus_best_content_blind"] = boot.diff(acc[HYBRID], acc[str(out["best_content_blind"])])
    return out


def summarize(outcomes: list[Outcome], boot: Bootstrap) -> MethodSummary:
    tokens = {k: statistics.fmean(o.tokens[k] for o in outcomes) for k in CATEGORIES}
    return MethodSummary.model_validate(
        {
            "accuracy": boot.mean([o.correct for o in outcomes]),
            "tokens": {**{k: round(v, 1) for k, v in tokens.items()}, "total": round(sum(tokens.values()), 1)},
            "executed_plans": round(statistics.fmean(o.executed for o in outcomes), 3),
            "wall_s": round(statistics.fmean(o.wall_s for o in outcomes), 2),
        }
    )


def reward_scale(cases: list[Case]) -> float:
    """The rewards' spread: rm-adaptive's margin is in its units, so one tau fits every RM."""
    rewards = [c.reward for case in cases for c in case.valid]
    return (statistics.pstdev(rewards) if len(rewards) > 1 else 1.0) or 1.0


def full_outcomes(
    cases: list[Case], config: BonConfig, judgments: list[JudgeRecord]
) -> tuple[Judgments, float, dict[str, list[Outcome]]]:
    """Every method's outcome per question at N, with the judgment map and the reward scale they used."""
    jmap = {(j.question_id, j.n): j for j in judgments}
    scale = reward_scale(cases)
    return jmap, scale, outcomes_at(cases, plans_per_question(cases), config, scale, jmap)


def adaptive_sweep(
    cases: list[Case], config: BonConfig, scale: float, jmap: Judgments, boot: Bootstrap
) -> list[SweepPoint]:
    """rm-adaptive at every margin of `config.taus`, then with no margin at all (execute every valid plan)."""
    sweep, n = [], plans_per_question(cases)
    for tau in [*config.taus, math.inf]:
        outs = [select_adaptive(_with_judge(c, n, jmap), tau * scale) for c in cases]
        s = summarize(outs, boot)
        sweep.append(SweepPoint(tau=None if math.isinf(tau) else tau, **dict(s)))
    return sweep


def curves(
    cases: list[Case], config: BonConfig, scale: float, jmap: Judgments, boot: Bootstrap
) -> dict[str, dict[str, CurvePoint]]:
    """Every method's accuracy and tokens at each N of `CURVE_NS` below N, and at N."""
    out: dict[str, dict[str, CurvePoint]] = {}
    big_n = plans_per_question(cases)
    for n in sorted({k for k in CURVE_NS if k < big_n} | {big_n}):
        for m, outs in outcomes_at(cases, n, config, scale, jmap).items():
            s = summarize(outs, boot)
            out.setdefault(m, {})[str(n)] = CurvePoint(accuracy=s.accuracy, tokens=s.tokens.total)
    return out


def compute_results(cases: list[Case], config: BonConfig, judgments: list[JudgeRecord], *, meta: RunInfo) -> BonResults:
    """Accuracy with bootstrap intervals, tokens per category, curves over N, the adaptive sweep, the marks."""
    if not cases:
        raise ConfigError(
            "no held-out question has traces yet", hint="let the rollout stage finish at least one question"
        )
    jmap, scale, full = full_outcomes(cases, config, judgments)
    boot = Bootstrap(len(cases), config.resamples, config.seed)
    auc = {
        m: Auc.model_validate(
            within_question_auc(
                [METHODS[m].seen(c) for c in cases], METHODS[m].score, resamples=config.resamples, seed=config.seed
            )
        )
        for m in full
        if METHODS[m].score is not None
    }
    notes = (
        []
        if "prior" in full
        else ["prior, kind-prior, router: absent (no training traces given to fit them: --prior-traces)"]
    )
    fallbacks = sum(c.router_fallback for case in cases for c in case.valid) if "router" in full else None
    if fallbacks is not None:
        notes.append(
            f"router: {fallbacks} of {sum(len(c.valid) for c in cases)} valid plans have a shape training "
            "never saw and were scored by the shape prior"
        )
    if "best_content_blind" in (mk := marks(boot, full)):
        notes.append(
            "best content-blind is chosen on the held-out questions it is reported on: optimistic for the "
            "baseline, so rm − best content-blind understates rm's edge (the conservative direction)"
        )
    valid = [len(c.valid) for c in cases]
    return BonResults(
        **{k: getattr(meta, k) for k in meta.model_fields_set},  # only what the caller said about the run
        n=plans_per_question(cases),
        questions=len(cases),
        plans=sum(len(c.candidates) for c in cases),
        valid_plans_per_question=round(statistics.fmean(valid), 2),
        questions_without_valid_plan=sum(1 for v in valid if v == 0),
        reward_std=scale,
        config=config,
        methods={m: summarize(full[m], boot) for m in METHODS if m in full},
        marks=mk,
        router_fallbacks=fallbacks,
        auc=auc,
        content=content_stats(
            cases,
            {m: (METHODS[m].seen, METHODS[m].score) for m in full if METHODS[m].score is not None},
            resamples=config.resamples,
            seed=config.seed,
        ),
        per_kind=per_kind(cases, {m: [o.correct for o in full[m]] for m in full}),
        by_template=by_template(cases, full, config),
        notes=notes,
        adaptive_sweep=adaptive_sweep(cases, config, scale, jmap, boot),
        curves=curves(cases, config, scale, jmap, boot),
    )


def per_question_rows(cases: list[Case], config: BonConfig, judgments: list[JudgeRecord]) -> list[dict[str, Any]]:
    """One row per question for `per_question.jsonl`: every method's pick, the rewards, lengths and priors."""
    _, _, full = full_outcomes(cases, config, judgments)
    rows = []
    for i, case in enumerate(cases):
        row: dict[str, Any] = {"question_id": case.question_id, "valid": len(case.valid)}
        for m, outs in full.items():
            o = outs[i]
            row[m] = {
                "correct": o.correct,
                "chosen": o.chosen,
                "tokens": round(o.total_tokens, 1),
                "executed": o.executed,
            }
        row["rewards"] = {str(c.index): round(c.reward, 4) for c in case.candidates}
        row["lengths"] = {str(c.index): c.length for c in case.candidates}
        for key, field in (("priors", "prior"), ("kind_priors", "kind_prior"), ("router_scores", "router")):
            values = {str(c.index): getattr(c, field) for c in case.candidates}
            if any(v is not None for v in values.values()):
                row[key] = {i: None if v is None else round(v, 4) for i, v in values.items()}
        row["shapes"] = {str(c.index): c.shape for c in case.candidates}
        rows.append(row)
    return rows
