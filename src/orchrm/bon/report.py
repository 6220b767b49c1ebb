"""The best-of-N report: two plots (accuracy vs N, accuracy vs tokens), `report.md` and a self-contained
`report.html`, all written from `results.json` alone, so a report can be redrawn without the run.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from ..atomic import write_text_atomic
from .results import BonResults, CurvePoint
from .selection import METHODS

ACCURACY_PLOT = "accuracy_vs_n.png"
TOKENS_PLOT = "accuracy_vs_tokens.png"


def _style(method: str) -> tuple[str | None, str, bool]:
    """colour, marker, whether its interval is shaded: from the registry; a method it lacks gets the defaults."""
    m = METHODS.get(method)
    return (m.color, m.marker, m.band) if m else (None, "o", False)


def _save(plt: Any, fig: Any, ax: Any, xlabel: str, title: str, path: Path) -> Path:
    ax.set_xlabel(xlabel)
    ax.set_ylabel("accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _points(curve: dict[str, CurvePoint]) -> tuple[list[str], list[CurvePoint]]:
    ns = sorted(curve, key=int)
    return ns, [curve[n] for n in ns]


def _plot_accuracy_vs_n(ax: Any, results: BonResults) -> None:
    for method, curve in results.curves.items():
        color, marker, band = _style(method)
        ns, points = _points(curve)
        xs = [int(n) for n in ns]
        ivs = [p.accuracy for p in points]
        ys = [100 * (iv.value or 0) for iv in ivs]
        ax.plot(xs, ys, marker=marker, color=color, label=method)
        lo = [100 * (iv.low if iv.low is not None else iv.value or 0) for iv in ivs]
        hi = [100 * (iv.high if iv.high is not None else iv.value or 0) for iv in ivs]
        if band:
            ax.fill_between(xs, lo, hi, color=color, alpha=0.12)
    ax.set_xscale("log", base=2)


def _plot_accuracy_vs_tokens(ax: Any, results: BonResults) -> None:
    for method, curve in results.curves.items():
        color, marker, _ = _style(method)
        ns, points = _points(curve)
        xs = [max(p.tokens, 1.0) for p in points]
        ys = [100 * (p.accuracy.value or 0) for p in points]
        ax.plot(xs, ys, marker=marker, color=color, label=method)
        ax.annotate(f"N={ns[-1]}", (xs[-1], ys[-1]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    sweep = results.adaptive_sweep
    if sweep:
        xs = [max(s.tokens.total, 1.0) for s in sweep]
        ys = [100 * (s.accuracy.value or 0) for s in sweep]
        ax.plot(
            xs,
            ys,
            linestyle="--",
            marker=".",
            color=_style("rm-adaptive")[0],
            label=f"rm-adaptive sweep (N={results.n})",
        )
    ax.set_xscale("log")


def plot(results: BonResults, folder: Path) -> list[Path]:
    """Write both PNGs into `folder`; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model = results.model_name or results.model or ""
    model = model if len(model) <= 24 else model[:20] + "…"  # a GGUF's identity is its sha256
    title = f"{results.task} · {results.questions} held-out questions · N={results.n} · {model}"
    fig, ax = plt.subplots(figsize=(7, 4.5))
    _plot_accuracy_vs_n(ax, results)
    paths = [_save(plt, fig, ax, "N (plans sampled per question)", title, folder / ACCURACY_PLOT)]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    _plot_accuracy_vs_tokens(ax, results)
    paths.append(_save(plt, fig, ax, "tokens per question (plan + execute + verify)", title, folder / TOKENS_PLOT))
    return paths


def method_rows(results: BonResults) -> list[list[str]]:
    """method, accuracy [95% CI], tokens per question by category, plans executed, wall s."""
    rows = []
    for method, m in results.methods.items():
        t = m.tokens
        rows.append(
            [
                method,
                m.accuracy.fmt(),
                f"{t.total:,.0f}",
                f"{t.plan:,.0f}",
                f"{t.execute:,.0f}",
                f"{t.verify:,.0f}",
                f"{m.executed_plans:.2f}",
                f"{m.wall_s:.1f}",
            ]
        )
    return rows


METHOD_HEADER = ["method", "acc % [95% CI]", "tok/q", "plan", "exec", "verify", "runs", "wall s"]


def mark_rows(results: BonResults) -> list[list[str]]:
    m = results.marks

    def iv(key: str, scale: float = 100.0) -> str:
        digits = 1 if scale == 100.0 else 2
        mark = results.mark(key)
        return mark.fmt(scale, digits) if mark is not None else "n/a (judge not run)"

    def fitted(key: str) -> str:
        return iv(key) if key in m else "n/a (no training traces)"

    best, blind = results.best_trivial, results.best_content_blind
    return [
        ["rm - random (accuracy points)", iv("rm_minus_random")],
        [
            f"rm - best content-blind selector, {blind or 'none'} (accuracy points)",
            fitted("rm_minus_best_content_blind"),
        ],
        [
            "rm - shape-mean (rm's rewards averaged within shape; accuracy points)",
            iv("rm_minus_shape-mean") if "rm_minus_shape-mean" in m else "n/a (no plan shapes)",
        ],
        [f"rm - best trivial selector, {best or 'none'} (accuracy points)", iv("rm_minus_best_trivial")],
        ["rm - shortest (accuracy points)", iv("rm_minus_shortest")],
        ["rm - prior (accuracy points)", fitted("rm_minus_prior")],
        ["rm - kind-prior (accuracy points)", fitted("rm_minus_kind-prior")],
        ["rm - router (accuracy points)", fitted("rm_minus_router")],
        ["rm - majority (accuracy points)", iv("rm_minus_majority")],
        ["rm tokens / majority tokens", iv("rm_tokens_over_majority", 1.0)],
        ["judge tokens / rm tokens", iv("judge_tokens_over_rm", 1.0)],
        ["share of the random→oracle gap rm closes (%)", iv("gap_closed_random_to_oracle")],
        ["rm-adaptive - random (accuracy points)", iv("rm_adaptive_minus_random")],
    ]


def auc_rows(results: BonResults) -> list[list[str]]:
    """selector, within-question AUC [95% CI], questions with mixed outcomes."""
    return [[m, a.fmt(1.0, 3), str(a.n_questions)] for m, a in results.auc.items()]


AUC_HEADER = ["scores by", "within-question AUC [95% CI]", "questions with mixed outcomes"]


def template_lines(results: BonResults) -> list[str]:
    """rm against the best content-blind selector and shape-mean on templates training saw, and on those it did not."""
    out = []
    for label, g in (results.by_template or {}).items():
        iv = {k: m.fmt() for k, m in g.marks.items() if not isinstance(m, str)}
        out.append(
            f"{label} templates ({g.questions} questions): rm {100 * g.accuracy.get('rm', 0.0):.1f}%; rm − best "
            f"content-blind ({g.marks.get('best_content_blind', 'none')}) "
            f"{iv.get('rm_minus_best_content_blind', 'n/a')} points; "
            f"rm − shape-mean {iv.get('rm_minus_shape-mean', 'n/a')} points"
        )
    return out


def content_lines(results: BonResults) -> list[str]:
    """Whether plan content decides (headroom, same-shape pairs), each score's AUC among same-shape plans, and rm's
    edge on seen and unseen templates."""
    c = results.content
    if c is None:
        return template_lines(results)
    return [
        f"content headroom (best shape's P(any right) − mean right, mean over {c.questions} questions): "
        f"{c.headroom.fmt()} points",
        f"same-shape pairs with different outcomes: {c.same_shape_pairs}; {c.clean_pairs} where neither plan copies "
        f"the prompt's examples, on {c.questions_with_clean_pairs} questions",
        *(
            f"same-shape AUC of {m}: {a.fmt(1.0, 3)} ({a.n_pairs} pairs, {a.n_questions} questions)"
            for m, a in c.auc.items()
        ),
        *template_lines(results),
    ]


def kind_rows(results: BonResults) -> tuple[list[str], list[list[str]]]:
    """Accuracy (%) of every method per question kind."""
    methods = list(results.methods)
    rows = [
        [kind, str(v["n"]), *(f"{100 * v[m]:.1f}" if m in v else "n/a" for m in methods)]
        for kind, v in results.per_kind.items()
    ]
    return ["kind", "questions", *methods], rows


def legend(results: BonResults) -> list[str]:
    return [METHODS[m].description if m in METHODS else m for m in results.methods]


def sweep_rows(results: BonResults) -> list[list[str]]:
    return [
        [
            "all" if s.tau is None else f"{s.tau:g}",
            s.accuracy.fmt(),
            f"{s.tokens.total:,.0f}",
            f"{s.executed_plans:.2f}",
        ]
        for s in results.adaptive_sweep
    ]


SWEEP_HEADER = ["tau (reward std)", "accuracy % [95% CI]", "tokens/q", "plans run"]


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _named(name: str | None, identity: str) -> str:
    """A model as the report names it: its name with its identity beside it (older results: the identity)."""
    return identity if not name or name == identity else f"{name} ({identity})"


def _models_line(r: BonResults) -> str:
    model = _named(r.model_name, r.model or "")
    agent = _named(r.agent_model_name, r.agent_model or r.model or "")
    return (
        f"orchestrator and sub-agents: `{model}`"
        if agent == model
        else f"orchestrator: `{model}`; sub-agents: `{agent}`"
    )


def _rm_line(r: BonResults) -> str:
    if r.rm is None:
        return "reward model: not recorded"
    return f"reward model: `{r.rm.path}` (backbone {r.rm.backbone}, trained on {', '.join(r.rm.tasks) or '?'})"


def _setup_lines(r: BonResults) -> list[str]:
    ro = r.rollout or {}
    return [
        f"task `{r.task}`, {r.questions} held-out questions (test split, never in RM training), N = {r.n}",
        f"{_models_line(r)}; degree {ro.get('degree')}, plan temperature "
        f"{ro.get('temperature')}, sub-agent max tokens {ro.get('agent_max_tokens')}",
        f"valid plans per question: {r.valid_plans_per_question}; questions without a valid plan: "
        f"{r.questions_without_valid_plan}",
        _rm_line(r),
        f"intervals: bootstrap over questions, {r.config.resamples} resamples, 95%; random is the exact expectation "
        "over the valid plans; each method is charged only the tokens it would spend alone; wall s is the critical "
        "path of the recorded call latencies with plans in parallel (near 0 for calls replayed from the cache)",
    ]


def write_reports(results: BonResults, folder: Path) -> dict[str, Path]:
    """Plots, `report.md` and `report.html` in `folder`."""
    pngs = plot(results, folder)
    setup = _setup_lines(results)
    warnings = results.warnings
    md = [f"# Best-of-N with the orchestration reward model: {results.task}", ""]
    md += [f"> warning: {w}" for w in warnings] + ([""] if warnings else [])
    md += [f"- {line}" for line in setup] + ["", f"## Methods at N = {results.n}", ""]
    md += [_md_table(METHOD_HEADER, method_rows(results)), ""] + [f"- {d}" for d in legend(results)]
    md += [f"- note: {n}" for n in results.notes]
    md += ["", "## Marks", "", _md_table(["mark", "value [95% CI]"], mark_rows(results))]
    md += ["", "## Within-question AUC", "", _md_table(AUC_HEADER, auc_rows(results))]
    md += ["", "## Plan content (among plans of one shape)", ""] + [f"- {line}" for line in content_lines(results)]
    md += ["", "## Accuracy per question kind (%)", "", _md_table(*kind_rows(results))]
    md += ["", "## rm-adaptive sweep", "", _md_table(SWEEP_HEADER, sweep_rows(results)), "", "## Curves", ""]
    md += [f"![{p.stem}]({p.name})" for p in pngs]
    md_path = folder / "report.md"
    write_text_atomic(md_path, "\n".join(md) + "\n")

    imgs = "".join(
        f'<img alt="{p.stem}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">' for p in pngs
    )
    style = (
        "body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}img{max-width:100%}.warn{color:#a60}"
    )
    body = [f"<h1>Best-of-N with the orchestration reward model: {html.escape(results.task)}</h1>"]
    body += [f'<p class="warn">warning: {html.escape(w)}</p>' for w in warnings]
    body += ["<ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in setup) + "</ul>"]
    body += [f"<h2>Methods at N = {results.n}</h2>", _html_table(METHOD_HEADER, method_rows(results))]
    body += ["<ul>" + "".join(f"<li>{html.escape(d)}</li>" for d in legend(results)) + "</ul>"]
    body += [f"<p>note: {html.escape(n)}</p>" for n in results.notes]
    body += ["<h2>Marks</h2>", _html_table(["mark", "value [95% CI]"], mark_rows(results))]
    body += ["<h2>Within-question AUC</h2>", _html_table(AUC_HEADER, auc_rows(results))]
    body += ["<h2>Plan content (among plans of one shape)</h2>"]
    body += ["<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in content_lines(results)) + "</ul>"]
    body += ["<h2>Accuracy per question kind (%)</h2>", _html_table(*kind_rows(results))]
    body += ["<h2>rm-adaptive sweep</h2>", _html_table(SWEEP_HEADER, sweep_rows(results)), "<h2>Curves</h2>", imgs]
    html_path = folder / "report.html"
    head = f"<meta charset='utf-8'><title>orchrm best-of-N</title><style>{style}</style>"
    page = f"<!doctype html><html><head>{head}</head><body>{''.join(body)}</body></html>"
    write_text_atomic(html_path, page)
    return {"md": md_path, "html": html_path, **{p.stem: p for p in pngs}}
