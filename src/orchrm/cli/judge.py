"""`orchrm judge`: pointwise / pairwise / listwise judgments over a JSONL file with the skill evaluator."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import BaseModel, ConfigDict, ValidationError
from rich.console import Console

from ..atomic import write_text_atomic
from ..errors import ConfigError
from ..evidence import EvaluatorConfig, Judgment, Skill, SkillEvaluator, load_skills
from ..llm import open_llm
from . import options as opt
from .render import usage_table

Mode = Literal["pointwise", "pairwise", "listwise"]
_NEEDS = {"pointwise": (1, 1), "pairwise": (2, 2), "listwise": (2, 64)}


class JudgeRow(BaseModel):
    """One input line. `response` is shorthand for `responses: [response]`."""

    model_config = ConfigDict(extra="ignore")

    id: str | int | None = None
    question: str
    response: str | None = None
    responses: list[str] | None = None
    reference: str | None = None
    kind: str | None = None
    entry: dict[str, Any] | None = None

    def candidates(self) -> list[str]:
        return self.responses if self.responses is not None else [self.response] if self.response is not None else []


def read_rows(path: Path, mode: Mode) -> list[JudgeRow]:
    """Parse and check every line; every bad line is reported, with its number."""
    try:
        lines = (sys.stdin.read() if str(path) == "-" else path.read_text()).splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    rows, problems = [], []
    lo, hi = _NEEDS[mode]
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = JudgeRow.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            problems.append(f"line {n}: {'.'.join(map(str, first['loc'])) or 'row'}: {first['msg']}")
            continue
        k = len(row.candidates())
        if not lo <= k <= hi:
            problems.append(f"line {n}: {mode} needs {lo if lo == hi else f'{lo}+'} response(s), got {k}")
            continue
        rows.append(row)
    if problems:
        raise ConfigError(
            f"{path}: {len(problems)} bad line(s); first: {problems[0]}",
            hint="rows are {question, response | responses, reference?, kind?}",
            detail="\n".join(problems[1:20]) or None,
        )
    if not rows:
        raise ConfigError(f"{path} holds no rows")
    return rows


async def judge_rows(
    ev: SkillEvaluator,
    rows: list[JudgeRow],
    mode: Mode,
    kind: str,
    concurrency: int,
    on_done: Callable[[int], None] | None = None,
) -> list[Judgment]:
    """Every row judged, `concurrency` at a time; `on_done(n)` after each, with the count judged so far."""
    sem = asyncio.Semaphore(concurrency)
    done = 0

    async def one(row: JudgeRow) -> Judgment:
        nonlocal done
        async with sem:
            kw = {"kind": row.kind or kind, "reference": row.reference, "entry": row.entry}
            c = row.candidates()
            if mode == "pointwise":
                judged = await ev.apointwise(row.question, c[0], **kw)
            elif mode == "pairwise":
                judged = await ev.apairwise(row.question, c[0], c[1], **kw)
            else:
                judged = await ev.alistwise(row.question, c, **kw)
        done += 1
        if on_done is not None:
            on_done(done)
        return judged

    return list(await asyncio.gather(*(one(r) for r in rows)))


def _prepare(
    input_path: Path,
    mode: str,
    protocol: str,
    skills: list[Path] | None,
    max_steps: int,
    reference_free: bool,
    always_llm: bool,
    single_order: bool,
) -> tuple[list[JudgeRow], list[Skill], EvaluatorConfig]:
    """The options checked and resolved, before any model is opened: rows, skills and evaluator settings."""
    if mode not in _NEEDS:
        raise ConfigError(f"unknown mode {mode!r}", hint="use pointwise, pairwise or listwise")
    if protocol not in ("auto", "json", "tools"):
        raise ConfigError(f"unknown protocol {protocol!r}", hint="use auto, json or tools")
    rows = read_rows(input_path, mode)  # type: ignore[arg-type]
    loaded = load_skills(list(skills) if skills else None)
    config = EvaluatorConfig(
        max_steps=max_steps,
        protocol=protocol,
        use_references=not reference_free,
        skip_llm_when_decisive=not always_llm,
        both_orders=not single_order,
    )
    return rows, loaded, config


def _run_judgment(
    llm: Any,
    rows: list[JudgeRow],
    loaded: list[Skill],
    config: EvaluatorConfig,
    mode: str,
    kind: str,
    concurrency: int,
    reporting: opt.ProgressOptions,
) -> list[Judgment]:
    """Every row judged with `llm` (None: rule evidence only), progress reported as rows finish."""
    ev = SkillEvaluator(llm, loaded, config)
    with reporting.reporter() as progress:
        spent = (lambda: llm.ledger.total().total_tokens) if llm is not None else (lambda: 0)  # noqa: E731
        report = lambda n: progress.update("judged rows", done=n, total=len(rows), tokens=spent())  # noqa: E731
        return asyncio.run(judge_rows(ev, rows, mode, kind, concurrency, report))  # type: ignore[arg-type]


def _write_judgments(rows: list[JudgeRow], judgments: list[Judgment], ledger: Any, output: Path | None) -> None:
    """Judgments as JSONL to `output` (or stdout); the summary and token usage to stderr."""
    err = Console(stderr=True, highlight=False)
    lines = [
        json.dumps({"id": r.id, **j.model_dump()}, ensure_ascii=False) for r, j in zip(rows, judgments, strict=True)
    ]
    if output is None:
        print("\n".join(lines))
    else:
        write_text_atomic(output, "\n".join(lines) + "\n")
    ok = sum(j.status == "ok" for j in judgments)
    skipped = sum(j.llm_skipped for j in judgments)
    err.print(
        f"{len(judgments)} judged ({ok} ok, {len(judgments) - ok} error), LLM skipped on {skipped} by rule evidence"
    )
    if ledger is not None:
        err.print(usage_table(ledger))


@opt.progress_options(json=False)  # the judgments are the output, as JSONL
def judge(
    input_path: Annotated[Path, typer.Argument(metavar="INPUT", help="JSONL rows; '-' reads stdin.")],
    mode: Annotated[str, typer.Option(help="pointwise | pairwise | listwise.")] = "pairwise",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write judgments here (JSONL); default stdout.")
    ] = None,
    kind: Annotated[str, typer.Option(help="Task kind for rows without one: math, qa, trajectory, any.")] = "any",
    backend: opt.Backend = "local",
    model: opt.Model = None,
    base_url: opt.BaseUrl = None,
    api_key_env: opt.ApiKeyEnv = "OPENAI_API_KEY",
    skills: Annotated[
        list[Path] | None, typer.Option("--skill", help="A skill folder (repeatable); default: the shipped skills.")
    ] = None,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Rule evidence only; undecided rows get status error.")
    ] = False,
    reference_free: Annotated[bool, typer.Option("--reference-free", help="Ignore reference answers.")] = False,
    always_llm: Annotated[bool, typer.Option("--always-llm", help="Run the agent even when rules decide.")] = False,
    single_order: Annotated[bool, typer.Option("--single-order", help="Pairwise: judge one order only.")] = False,
    max_steps: Annotated[int, typer.Option(help="Agent steps per run.")] = 6,
    protocol: Annotated[str, typer.Option(help="Agent actions: auto | json | tools (native tool calls).")] = "auto",
    concurrency: Annotated[int, typer.Option(help="Rows judged at once.")] = 4,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither read nor write the response cache.", rich_help_panel=opt.MODELS)
    ] = False,
    *,
    reporting: opt.ProgressOptions,
) -> None:
    """Judge responses with the skill evaluator; one judgment per input row, token usage under `verify`."""
    rows, loaded, config = _prepare(
        input_path, mode, protocol, skills, max_steps, reference_free, always_llm, single_order
    )

    def run(llm: Any) -> list[Judgment]:
        return _run_judgment(llm, rows, loaded, config, mode, kind, concurrency, reporting)

    if no_llm:
        judgments, ledger = run(None), None
    else:
        with open_llm(
            backend, cache=not no_cache, model=model, base_url=base_url, api_key_env=api_key_env, concurrency=None
        ) as llm:
            judgments, ledger = run(llm), llm.ledger
    _write_judgments(rows, judgments, ledger, output)
