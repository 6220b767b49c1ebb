"""Executions run elsewhere -> orchrm traces, so `orchrm pairs` trains an RM on a team's own MAS runs.

A row is one (question, plan) execution: the question, the plan text as the orchestrator wrote it (orchrm
JSON or MAS-Orchestra XML, read as the reward path reads it), and what came of it: a final answer and/or a grade (`correct`, or a `score` in
[0, 1]), optional token counts per category and an optional checkpoint label (for `specialized-over-base`).
Rows come from a JSONL file or a folder saved with `datasets.Dataset.save_to_disk`.

A malformed row (not JSON, an unknown or mistyped field) stops the import with one line naming the file
and line and nothing written; a plan that does not parse or breaks a plan rule is an outcome, recorded in
its trace as a `PlanError` (as `orchrm rollout` records one). The run folder is written whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ... import safejson
from ...atomic import replacing_dir
from ...errors import ConfigError, RunFileError
from ...folders import stamp_folder
from ...llm import CATEGORIES, TokenCount
from ...version import __version__
from ..plans import Plan, PlanError, validate_plan
from ..traces import RUN_FILE, TRACES_FILE, OrchestratorInfo, PlanErrorRecord, ScoreRecord, Trace
from ._reading import read_completion

PlanFormat = Literal["orchrm", "mas-orchestra"]
PLAN_FORMATS: tuple[str, ...] = ("orchrm", "mas-orchestra")
#: Written beside traces.jsonl: where the traces came from (a rollout folder has run.json instead).
IMPORT_FILE = "import.json"
#: One JSONL line is read under these bounds (a plan text is bounded again by its parser).
ROW_LIMITS = safejson.Limits(max_chars=4_000_000, max_depth=16, max_number_chars=100)


class ExternalTokens(BaseModel):
    """Tokens one category of calls used (`plan`: writing the plan; `execute`: the sub-agents)."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    calls: int = Field(0, ge=0)


class ExternalExecution(BaseModel):
    """One execution as another system records it: the row format of `orchrm import`."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, description="The question the plan was written for.")
    plan: str = Field(min_length=1, description="The plan text as the orchestrator wrote it.")
    question_id: str | None = Field(None, min_length=1, max_length=200, description="Default: a hash of the question.")
    final_answer: str | None = None
    correct: bool | None = Field(None, description="The grade; default: score >= the import's correct_at.")
    score: float | None = Field(None, ge=0.0, le=1.0)
    gold: str | None = Field(
        None, description="The reference answer, if any (questions without one get consensus pairs)."
    )
    tokens: dict[str, ExternalTokens] | None = None
    checkpoint: str | None = Field(None, min_length=1, description="The orchestrator checkpoint's label.")
    task: str | None = Field(None, min_length=1)
    split: str | None = Field(None, min_length=1)
    model_id: str | None = Field(None, description="The orchestrator's model.")

    @field_validator("final_answer", "gold", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        # Answer columns are often numbers (42, 0.5); a bool is not an answer.
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("tokens")
    @classmethod
    def _known_categories(cls, value: dict[str, ExternalTokens] | None) -> dict[str, ExternalTokens] | None:
        unknown = sorted(set(value or {}) - set(CATEGORIES))
        if unknown:
            raise ValueError(f"unknown token category {unknown[0]!r}; use {', '.join(CATEGORIES)}")
        return value


@dataclass(frozen=True)
class ImportDefaults:
    """What a row that does not say gets."""

    task: str = "external"
    split: str = "train"
    checkpoint: str = "base"
    model_id: str = "external"
    correct_at: float = 1.0


class ImportReport(BaseModel):
    """What an import read and wrote (saved as import.json in the run folder)."""

    orchrm_version: str = __version__
    source: str
    format: Literal["jsonl", "datasets"]
    plan_format: PlanFormat
    rows: int = 0
    questions: int = 0
    valid_plans: int = 0
    plan_errors: dict[str, int] = Field(default_factory=dict, description="Invalid plans by the rule they broke.")
    graded: int = 0
    answered: int = 0
    checkpoints: dict[str, int] = Field(default_factory=dict)


def _row(value: Any, where: str) -> ExternalExecution:
    if not isinstance(value, dict):
        raise RunFileError(f"{where}: a row must be a JSON object, got {type(value).__name__}")
    try:
        return ExternalExecution.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(row)"
        raise RunFileError(f"{where}: {field}: {err['msg']}") from None


def read_jsonl_rows(path: Path) -> Iterator[tuple[str, ExternalExecution]]:
    """(`file:line`, row) for each non-blank line; a bad line is a `RunFileError` naming file and line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark, as some exporters write one
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            value = safejson.loads(raw, ROW_LIMITS)
        except safejson.UnsafeJSONError as exc:
            raise RunFileError(f"{where}: {exc}") from None
        yield where, _row(value, where)


def read_datasets_rows(path: Path, split: str | None = None) -> Iterator[tuple[str, ExternalExecution]]:
    """(`folder[split] row N`, row) for each row of a folder saved with `save_to_disk` (a `DatasetDict` needs
    `split`, or has exactly one split). Needs the `datasets` package; without it, a one-line error."""
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            "reading a datasets folder needs the `datasets` package",
            hint="pip install datasets, or export the rows as JSONL",
        ) from None
    if not path.is_dir():
        raise RunFileError(f"{path} is not a folder saved with datasets' save_to_disk")
    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as exc:  # datasets raises many types for a folder it cannot read
        raise RunFileError(f"cannot load {path} as a datasets folder: {type(exc).__name__}: {exc}") from None
    if isinstance(loaded, datasets.DatasetDict):
        names = list(loaded)
        if split is None and len(names) == 1:
            split = names[0]
        if split not in loaded:
            raise ConfigError(f"{path} holds splits {', '.join(names)}; choose one with --split")
        loaded, label = loaded[split], f"{path}[{split}]"
    else:
        label = str(path)
    for i, value in enumerate(loaded):
        where = f"{label} row {i}"
        if isinstance(value.get("tokens"), dict):  # a struct column fills categories a row lacks with None
            value = {**value, "tokens": {k: v for k, v in value["tokens"].items() if v is not None}}
        yield where, _row({k: v for k, v in value.items() if v is not None}, where)


def _plan(text: str, plan_format: PlanFormat) -> tuple[Plan | None, PlanErrorRecord | None, str]:
    """The validated plan (or the error it is recorded with) and its degree. The text is read as the reward
    path reads it (`read_completion`); a MAS-Orchestra row whose text MAS-Orchestra's parser would have read
    otherwise is refused, since the execution it records is not of the plan orchrm reads."""
    degree = "dag"
    try:
        reading = read_completion(text)
        if plan_format == "mas-orchestra" and reading.mas_orchestra_differs is not None:
            raise reading.mas_orchestra_differs
        plan = reading.plan
        degree = "direct" if not plan.agents and plan.answer is not None else "dag"
        return validate_plan(plan, degree=degree), None, degree
    except PlanError as exc:
        return None, PlanErrorRecord(rule=exc.rule, message=exc.reason, agent=exc.agent), degree


def question_id_of(question: str) -> str:
    """The id a row without one gets: rows with the same question text are one question."""
    return "q-" + hashlib.sha256(question.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def to_trace(
    row: ExternalExecution, *, plan_index: int, plan_format: PlanFormat, defaults: ImportDefaults = ImportDefaults()
) -> Trace:
    """The trace of one external execution. It has no agent events (orchrm did not run the agents): pairs
    come from its grade, its answer (consensus), its checkpoint label and its plan's validity."""
    plan, error, degree = _plan(row.plan, plan_format)
    correct = row.correct
    if correct is None and row.score is not None:
        correct = row.score >= defaults.correct_at
    value = row.score if row.score is not None else (float(correct) if correct is not None else None)
    score = ScoreRecord(value=value, correct=correct) if correct is not None else None
    tokens = {
        k: TokenCount(calls=v.calls, prompt_tokens=v.prompt_tokens, completion_tokens=v.completion_tokens)
        for k, v in (row.tokens or {}).items()
    }
    return Trace(
        task=row.task or defaults.task,
        split=row.split or defaults.split,
        question_id=row.question_id or question_id_of(row.question),
        question=row.question,
        gold=row.gold,
        plan_index=plan_index,
        plan_text=row.plan,
        plan=plan,
        plan_error=error,
        orchestrator=OrchestratorInfo(
            backend="external",
            model_id=row.model_id or defaults.model_id,
            checkpoint=row.checkpoint or defaults.checkpoint,
            degree=degree,
            sample_index=plan_index,
        ),
        executed=row.final_answer is not None or score is not None,
        final_agent=plan.sink() if plan is not None and plan.agents else None,
        final_output=row.final_answer,
        final_answer=row.final_answer,
        score=score,
        tokens=tokens,
    )


def import_executions(
    source: Path,
    out: Path,
    *,
    fmt: Literal["jsonl", "datasets"] = "jsonl",
    plan_format: PlanFormat = "orchrm",
    split: str | None = None,
    defaults: ImportDefaults = ImportDefaults(),
) -> ImportReport:
    """Read every row, then write `out/traces.jsonl` and `out/import.json` in one step (`out` is replaced
    whole, so a re-import replaces an earlier one). Plans are numbered per (task, question) in row order.
    Refuses to replace any other non-empty folder (a rollout's, say)."""
    if plan_format not in PLAN_FORMATS:
        raise ConfigError(f"unknown plan format {plan_format!r}; use {', '.join(PLAN_FORMATS)}")
    if out.exists() and not (out / IMPORT_FILE).exists() and (not out.is_dir() or any(out.iterdir())):
        what = "a rollout's run folder" if (out / RUN_FILE).exists() else "not empty and not made by orchrm import"
        raise ConfigError(f"{out} is {what}; import into a new folder")
    if fmt == "jsonl":
        rows = read_jsonl_rows(source)
    elif fmt == "datasets":
        rows = read_datasets_rows(source, split)
    else:
        raise ConfigError(f"unknown input format {fmt!r}; use jsonl or datasets")
    report = ImportReport(source=str(source), format=fmt, plan_format=plan_format)
    traces: list[Trace] = []
    next_index: Counter[tuple[str, str]] = Counter()
    for _where, row in rows:
        trace = to_trace(row, plan_index=0, plan_format=plan_format, defaults=defaults)
        trace.plan_index = trace.orchestrator.sample_index = next_index[(trace.task, trace.question_id)]
        next_index[(trace.task, trace.question_id)] += 1
        traces.append(trace)
    if not traces:
        raise RunFileError(f"{source} holds no rows")
    report.rows, report.questions = len(traces), len(next_index)
    report.valid_plans = sum(t.valid for t in traces)
    report.plan_errors = dict(Counter(t.plan_error.rule for t in traces if t.plan_error is not None).most_common())
    report.graded = sum(t.score is not None for t in traces)
    report.answered = sum(t.final_answer is not None for t in traces)
    report.checkpoints = dict(Counter(t.orchestrator.checkpoint for t in traces).most_common())
    with replacing_dir(out) as tmp:
        # One write; the folder is fsynced whole before it replaces `out`.
        lines = (t.model_dump_json(by_alias=True) + "\n" for t in traces)
        (tmp / TRACES_FILE).write_text("".join(lines), encoding="utf-8")
        (tmp / IMPORT_FILE).write_text(json.dumps(report.model_dump(), indent=2) + "\n", encoding="utf-8")
        stamp_folder(tmp, "import")
    return report
