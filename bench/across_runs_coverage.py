"""Coverage of `orchrm.bon.across_runs` at nominal 95%, by simulation of a grid like the trained arms' (issue #47).

    cd bench && nice -n 19 ../.venv/bin/python across_runs_coverage.py [--reps 20000] [--seed 0]

Each replication: two arms, each trained with 3 seeds and evaluated on the same 60 questions, 4 plans a question,
each plan right or wrong. On the logit scale a plan's chance is mu ± delta/2 (the arms' true difference) + the
question's difficulty (normal, SD 1.5 or 2: most questions all right or all wrong) ± half the arms' per-question gap
(SD 0.5 between the arms) + the run's effect (per training seed; half its variance shared by the two arms' runs of
one seed) + a question-by-run effect (SD 0.5). The run effect's SD is set in accuracy points (3 or 8: a logit shift
times the mean slope p(1-p) of the questions); the true accuracy of an arm, and the true difference (0 or +5 points,
delta solved for), are expectations over questions and runs (Gauss-Hermite). Three cases per setting:

- paired difference: the two arms on the same seeds, `across_runs(a, b, seeds=[1, 2, 3], seeds_minus=[1, 2, 3])`;
- one arm: `across_runs(a)` on the same draws, against the arm's true accuracy;
- unpaired difference: fresh draws whose two arms share nothing of their runs, seeds [1, 2, 3] against [4, 5, 6]
  (Welch).

Each is scored for `across_runs` (called once per replication); for the rule it used before issue #47 (Satterthwaite's
df over the run and question terms, floored at runs - 1; recomputed here from the same ANOVA terms, which are checked
against `across_runs`' own standard error and width); for the plain t over the run terms alone on their own df
(paired t over the per-seed differences, t over one arm's run means, Welch t over run means; no question term); and
for the other fix issue #47 offered, the whole standard error on the run terms' df (runs - 1; Welch's unpaired).
Coverage comes with its Monte Carlo standard error sqrt(p (1 - p) / reps); widths are mean full widths in points.

Writes bench/results/across_runs_coverage.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy import optimize, stats
from scipy.special import expit

from files import write_text_atomic
from orchrm.bon import across_runs
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

HERE = Path(__file__).parent
RESULTS = HERE / "results" / "across_runs_coverage.json"
LEVEL = 0.95
QUESTION_SDS = (1.5, 2.0)  # logit
RUN_SD_POINTS = (3.0, 8.0)
DIFFERENCES = (0.0, 5.0)  # points
CASES = ("paired difference", "one arm", "unpaired difference")
METHODS = ("across_runs", "Satterthwaite (before #47)", "plain t over runs", "df = runs - 1")


def expected_accuracy(mu: float, sd: float) -> float:
    """E[expit(N(mu, sd^2))] (4 plans at a chance p keep p as their mean)."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    return float((w * expit(mu + sd * x)).sum() / w.sum())


def mean_slope(mu: float, sd: float) -> float:
    """E[p (1 - p)] at p = expit(N(mu, sd^2)): accuracy points a logit of run effect moves a run mean by."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    p = expit(mu + sd * x)
    return float((w * p * (1 - p)).sum() / w.sum())


def ratios(num: np.ndarray, den: np.ndarray, empty: np.ndarray) -> np.ndarray:
    out = empty.astype(float).copy()
    np.divide(num, den, out=out, where=den > 0)
    return out


def terms(arms: list[np.ndarray], gaps: np.ndarray) -> dict[str, np.ndarray]:
    """`orchrm.bon.stats._t_interval`'s variance terms for every replication at once: `arms` [N, runs, questions]
    (a paired difference or one arm: one matrix), `gaps` [N, questions] the per-question means or differences."""
    q = gaps.shape[1]
    v_runs, den_runs, e_sum, den_e, run_dfs = 0.0, 0.0, 0.0, 0.0, []
    for y in arms:
        r = y.shape[1]
        means = y.mean(axis=2)
        v = means.var(axis=1, ddof=1) / r
        resid = y - means[:, :, None] - y.mean(axis=1)[:, None, :] + y.mean(axis=(1, 2))[:, None, None]
        df_e = (r - 1) * (q - 1)
        e = (resid**2).sum(axis=(1, 2)) / df_e / (r * q)
        v_runs, den_runs, e_sum, den_e = v_runs + v, den_runs + v**2 / (r - 1), e_sum + e, den_e + e**2 / df_e
        run_dfs.append(r - 1)
    v_q = gaps.var(axis=1, ddof=1) / q
    added = v_q - e_sum > 0
    var = v_runs + np.where(added, v_q - e_sum, 0.0)
    den = den_runs + np.where(added, v_q**2 / (q - 1) + den_e, 0.0)
    floor = float(min(run_dfs))
    satterthwaite = np.maximum(ratios(var**2, den, np.full_like(var, floor)), floor)
    return {
        "se": np.sqrt(var),
        "run_se": np.sqrt(v_runs),
        "satterthwaite_df": satterthwaite,
        "run_df": ratios(v_runs**2, den_runs, np.full_like(var, floor)),
    }


def score(value: np.ndarray, half: np.ndarray, truth: float, df: np.ndarray | None = None) -> dict:
    covered = float(np.mean(np.abs(value - truth) <= half))
    out = {
        "coverage": round(covered, 4),
        "mc_se": round(float(np.sqrt(covered * (1 - covered) / value.size)), 4),
        "mean_width_points": round(float(2 * half.mean() * 100), 2),
    }
    if df is not None:
        out["median_df"] = round(float(np.median(df)), 2)
    return out


def case(
    arms: list[np.ndarray], gaps: np.ndarray, truth: float, call, label: str
) -> tuple[dict[str, dict], dict[str, float]]:
    """The three methods' coverage of `truth` in one case; `call(i)` is `across_runs` on replication i."""
    t = terms(arms, gaps)
    value = arms[0].mean(axis=(1, 2)) - (arms[1].mean(axis=(1, 2)) if len(arms) > 1 else 0.0)
    n = value.size
    low, high, se, df = (np.empty(n) for _ in range(4))
    for i in range(n):
        iv = call(i)
        low[i], high[i], se[i], df[i] = iv.low, iv.high, iv.se, iv.df
    q = 0.5 + LEVEL / 2
    old = stats.t.ppf(q, t["satterthwaite_df"]) * t["se"]
    plain = stats.t.ppf(q, t["run_df"]) * t["run_se"]
    mid = (low + high) / 2
    checks = {  # the replica of the ANOVA terms against across_runs' own numbers
        f"{label}: max |se - across_runs se|": float(np.abs(se - t["se"]).max()),
        f"{label}: max |centre - value|": float(np.abs(mid - value).max()),
        f"{label}: max |half - max(before #47, plain)|": float(np.abs((high - low) / 2 - np.maximum(old, plain)).max()),
    }
    scored = {
        "across_runs": score(value, (high - low) / 2, truth, df),
        "Satterthwaite (before #47)": score(value, old, truth, t["satterthwaite_df"]),
        "plain t over runs": score(value, plain, truth, t["run_df"]),
        "df = runs - 1": score(value, stats.t.ppf(q, t["run_df"]) * t["se"], truth, t["run_df"]),
    }
    scored["across_runs"]["floor_binds_share"] = round(float(np.mean(plain > old)), 4)
    return scored, checks


def simulate(args: argparse.Namespace, index: int, question_sd: float, run_points: float, difference: float) -> dict:
    rng = np.random.default_rng([args.seed, index])
    n, r, q, plans, mu = args.reps, args.runs, args.questions, args.plans, args.mu
    spread = np.sqrt(question_sd**2 + args.gap_sd**2 / 4 + args.cell_sd**2)  # a plan's logit, less the run effect
    run_sd = run_points / 100 / mean_slope(mu, spread)
    total = np.sqrt(spread**2 + run_sd**2)
    gap = lambda d: expected_accuracy(mu + d / 2, total) - expected_accuracy(mu - d / 2, total)  # noqa: E731
    delta = optimize.brentq(lambda d: gap(d) - difference / 100, -5, 5) if difference else 0.0
    truth_one, truth_diff = expected_accuracy(mu + delta / 2, total), gap(delta)

    def draw(shared: float) -> tuple[np.ndarray, np.ndarray]:
        question = rng.normal(0, question_sd, (n, 1, q))
        arm_gap = rng.normal(0, args.gap_sd, (n, 1, q))
        seed = rng.normal(0, run_sd * np.sqrt(shared), (n, r, 1))

        def arm(sign: int) -> np.ndarray:
            logit = (
                mu
                + sign * (delta + arm_gap) / 2
                + question
                + seed
                + rng.normal(0, run_sd * np.sqrt(1 - shared), (n, r, 1))
                + rng.normal(0, args.cell_sd, (n, r, q))
            )
            return rng.binomial(plans, expit(logit)) / plans

        return arm(+1), arm(-1)

    seeds, others = list(range(1, r + 1)), list(range(r + 1, 2 * r + 1))
    a, b = draw(args.shared)
    d = a - b
    paired, c1 = case(
        [d], d.mean(axis=1), truth_diff, lambda i: across_runs(a[i], b[i], seeds=seeds, seeds_minus=seeds), "paired"
    )
    one, c2 = case([a], a.mean(axis=1), truth_one, lambda i: across_runs(a[i], seeds=seeds), "one arm")
    realised_run_sd = float(np.sqrt(a.mean(axis=2).var(axis=1, ddof=1).mean()) * 100)
    u, v = draw(0.0)
    unpaired, c3 = case(
        [u, v], u.mean(axis=1) - v.mean(axis=1), truth_diff,
        lambda i: across_runs(u[i], v[i], seeds=seeds, seeds_minus=others), "unpaired",
    )  # fmt: skip
    return {
        "question_sd_logit": question_sd,
        "run_sd_points": run_points,
        "difference_points": difference,
        "run_sd_logit": round(run_sd, 4),
        "delta_logit": round(delta, 4),
        "truth": {"one arm": round(truth_one, 5), "difference": round(truth_diff, 5)},
        "run_mean_sd_points": round(realised_run_sd, 2),  # one arm's run means, plan and cell noise included
        "cases": {"paired difference": paired, "one arm": one, "unpaired difference": unpaired},
        "checks": {**c1, **c2, **c3},
    }


def ranges(settings: list[dict]) -> dict:
    out: dict = {}
    for c in CASES:
        for m in METHODS:
            cov = [s["cases"][c][m]["coverage"] for s in settings]
            width = [s["cases"][c][m]["mean_width_points"] for s in settings]
            out.setdefault(c, {})[m] = {"coverage": [min(cov), max(cov)], "mean_width_points": [min(width), max(width)]}
    return out


def table(settings: list[dict]) -> str:
    lines = [
        "| q SD | run SD | diff | case | across_runs | width | before #47 | width | plain t | width | runs-1 df | width |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in settings:
        for c in CASES:
            row = s["cases"][c]
            cells = [
                f"{row[m]['coverage']:.3f} ± {row[m]['mc_se']:.3f} | {row[m]['mean_width_points']:.1f}" for m in METHODS
            ]
            head = f"| {s['question_sd_logit']} | {s['run_sd_points']:g} | {s['difference_points']:+g} | {c} | "
            lines.append(head + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20_000, help="Replications per setting (>= 10,000 for the record).")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=3, help="Training seeds per arm.")
    ap.add_argument("--questions", type=int, default=60)
    ap.add_argument("--plans", type=int, default=4, help="Plans per question and run, each right or wrong.")
    ap.add_argument("--mu", type=float, default=0.5, help="Mean logit (0.5: about 60%% accuracy).")
    ap.add_argument("--gap-sd", type=float, default=0.5, help="SD of the arms' per-question gap (logit).")
    ap.add_argument("--cell-sd", type=float, default=0.5, help="SD of the question-by-run effect (logit).")
    ap.add_argument("--shared", type=float, default=0.5, help="Share of the run variance one seed gives both arms.")
    args = ap.parse_args()
    start = time.perf_counter()
    grid = [(qs, rp, dp) for qs in QUESTION_SDS for rp in RUN_SD_POINTS for dp in DIFFERENCES]
    settings = []
    for i, (qs, rp, dp) in enumerate(grid):
        settings.append(simulate(args, i, qs, rp, dp))
        print(f"setting {i + 1}/{len(grid)} done ({time.perf_counter() - start:.0f} s)", flush=True)
    worst = max(v for s in settings for v in s["checks"].values())
    result = {
        "level": LEVEL,
        "reps": args.reps,
        "model": {
            k: getattr(args, k) for k in ("seed", "runs", "questions", "plans", "mu", "gap_sd", "cell_sd", "shared")
        },
        "grid": {"question_sd_logit": QUESTION_SDS, "run_sd_points": RUN_SD_POINTS, "difference_points": DIFFERENCES},
        "ranges": ranges(settings),
        "replica_worst_check": worst,
        "settings": settings,
        "seconds": round(time.perf_counter() - start, 1),
        "stamp": stamp(),
    }
    write_text_atomic(RESULTS, json.dumps(result, indent=2) + "\n")
    print(table(settings))
    print(f"replica against across_runs, worst |difference|: {worst:.2e}")


if __name__ == "__main__":
    main()
