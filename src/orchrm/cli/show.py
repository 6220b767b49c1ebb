"""`orchrm show`: a run's traces as a table, or one trace rendered readably (optionally re-executed)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..errors import ConfigError
from ..llm import BACKENDS, open_llm
from ..mas.rollout import replay
from ..mas.traces import TRACES_FILE, Trace, locate_traces, read_traces
from ..tasks import load_task
from .say import styled, text


def _clip(text: str | None, limit: int) -> str:
    if text is None:
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _verdict(t: Trace) -> str:
    if t.score is None:
        return "-"
    if t.score.error:
        return "scorer error"
    return "correct" if t.score.correct else "wrong"


def runs_table(traces: list[Trace]) -> Table:
    table = Table(title=f"{len(traces)} traces", title_justify="left")
    for col in ("#", "question", "plan", "valid", "agents", "answer", "gold", "verdict", "tokens"):
        table.add_column(col, justify="right" if col in ("#", "plan", "tokens") else "left")
    for i, t in enumerate(traces):
        agents = text(",".join(t.agent_types())) if t.plan else text(t.plan_error.rule if t.plan_error else "?", "red")
        table.add_row(
            str(i),
            text(t.question_id),
            str(t.plan_index),
            "yes" if t.valid else "no",
            agents,
            text(_clip(t.final_answer, 20)),
            text(_clip(t.gold, 20)),
            _verdict(t),
            f"{sum(c.total_tokens for c in t.tokens.values()):,}",
        )
    return table


def render_trace(t: Trace) -> Group:
    o = t.orchestrator
    head = Text()
    head.append(f"{t.task} · {t.question_id} · plan {t.plan_index}\n", style="bold")
    head.append(
        f"orchestrator {o.backend}/{o.model_id} checkpoint={o.checkpoint} degree={o.degree} "
        f"T={o.temperature} sample={o.sample_index} seed={o.seed}\n",
        style="dim",
    )
    if t.agent_model != o.model_id:
        head.append(f"sub-agents {t.agent_backend}/{t.agent_model}\n", style="dim")
    head.append(f"question: {t.question}\ngold: {t.gold}")
    parts: list[object] = [head]
    if t.plan is None:
        err = t.plan_error
        why = f"{err.rule}: {err.message}" + (f" (agent {err.agent})" if err and err.agent else "") if err else "?"
        parts.append(Panel(Text(t.plan_text), title=styled(("invalid plan", "red"), f" — {why}"), title_align="left"))
    elif not t.plan.agents:
        parts.append(Panel(Text(t.plan.answer or ""), title="direct answer", title_align="left"))
    else:
        plan = Table(title="plan", title_justify="left")
        for col in ("agent", "type", "options", "from", "input"):
            plan.add_column(col)
        for a in t.plan.agents:
            cells = (a.id, a.type, str(a.options or ""), ",".join(t.plan.upstream(a.id)), _clip(a.input, 90))
            plan.add_row(*map(text, cells))
        parts.append(plan)
    for ev in t.agents:
        tok = sum(c.usage.total_tokens for c in ev.calls)
        body = Text()
        if ev.resolved_input is not None:
            body.append("input: ", style="bold")
            body.append(_clip(ev.resolved_input, 600) + "\n")
        if ev.steps:
            body.append("steps: ", style="bold")
            body.append(_clip("; ".join(str(s) for s in ev.steps), 400) + "\n")
        if ev.output is not None:
            body.append("output: ", style="bold")
            body.append(_clip(ev.output, 1200) + "\n")
        if ev.error:
            body.append(f"error: {ev.error}\n", style="red")
        body.append(f"answer: {ev.answer}", style="bold")
        style = {"ok": "green", "failed": "red", "skipped": "yellow"}[ev.status]
        title = styled(
            (ev.id, style), f" ({ev.type}, {ev.status}) · {len(ev.calls)} calls · {tok} tok · {ev.latency_s:.1f}s"
        )
        parts.append(Panel(body, title=title, title_align="left"))
    summary = Text()
    summary.append(f"final answer: {t.final_answer}  ", style="bold")
    summary.append(f"[{_verdict(t)}]  ")
    summary.append(" · ".join(f"{k}: {v.total_tokens:,} tok in {v.calls} calls" for k, v in t.tokens.items()))
    if t.executed:
        summary.append(f" · wall {t.wall_s:.1f}s")
    for e in t.errors:
        summary.append(f"\nerror: {e}", style="red")
    parts.append(summary)
    return Group(*parts)  # type: ignore[arg-type]


def show(
    path: Annotated[Path, typer.Argument(help=f"A run folder or its {TRACES_FILE}.")],
    index: Annotated[int | None, typer.Option("--index", "-i", help="Render the trace at this row.")] = None,
    question: Annotated[str | None, typer.Option(help="Render traces of this question id.")] = None,
    plan: Annotated[int | None, typer.Option(help="With --question: only this plan index.")] = None,
    rerun: Annotated[
        bool, typer.Option("--replay", help="Re-execute the selected trace's plan and show the new trace.")
    ] = False,
    backend: Annotated[str, typer.Option(help=f"For --replay: one of {', '.join(BACKENDS)}.")] = "local",
    model: Annotated[str | None, typer.Option(help="For --replay: the model.")] = None,
    base_url: Annotated[str | None, typer.Option(help="For --replay with openai: the server URL.")] = None,
) -> None:
    """Show a run's traces as a table, or one trace in full (--index, or --question [--plan])."""
    traces = read_traces(locate_traces(path))
    console = Console(highlight=False)
    if index is None and question is None:
        console.print(runs_table(traces))
        return
    if index is not None:
        if not 0 <= index < len(traces):
            raise ConfigError(f"--index {index} is out of range: the run has {len(traces)} traces")
        chosen = [traces[index]]
    else:
        chosen = [t for t in traces if t.question_id == question and (plan is None or t.plan_index == plan)]
        if not chosen:
            raise ConfigError(f"no trace for question {question!r}" + (f" plan {plan}" if plan is not None else ""))
    for t in chosen:
        console.print(render_trace(t))
    if rerun:
        t = chosen[0]
        with open_llm(backend, model=model, base_url=base_url) as llm:
            new = asyncio.run(replay(t, load_task(t.task), llm))
        console.rule("re-executed")
        console.print(render_trace(new))
