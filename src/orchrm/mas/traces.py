"""Trace records: one versioned JSON record per (question, plan) execution, and the run files that hold them.

A run folder holds `run.json` (the `RunConfig`) and `traces.jsonl`, one `Trace` a line, appended and flushed
(and fsynced) record by record so a run killed at any point keeps every finished record. A torn last line
(no newline: the process died mid-write) is discarded on resume; any other unreadable line is an error that
names the file and the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from .. import jsonl
from ..errors import RunFileError
from ..jsonl import JsonlWriter, RecordError
from ..llm import Completion, Message, TokenCount, Usage
from .plans import Plan

TRACE_VERSION = 1
TRACES_FILE = "traces.jsonl"
RUN_FILE = "run.json"


class LLMCall(BaseModel):
    """One completion an agent (or the orchestrator) asked for, with what it cost."""

    messages: list[Message]
    text: str
    finish_reason: str
    usage: Usage
    latency_s: float
    cached: bool
    sample_index: int = 0
    temperature: float = 0.0
    start_s: float = Field(0.0, description="Seconds from the start of the plan's execution to the request.")
    end_s: float = Field(0.0, description="Seconds from the start of the plan's execution to the reply.")

    @classmethod
    def of(
        cls,
        completion: Completion,
        messages: list[Message],
        *,
        temperature: float,
        start_s: float,
        end_s: float,
        sample_index: int | None = None,
    ) -> LLMCall:
        """The record of `completion`, asked with `messages` at `temperature` between `start_s` and `end_s`
        (its own sample index unless `sample_index` names another: a plan sampled alone keeps its number)."""
        kept = completion.model_dump(include=_FROM_COMPLETION)
        if sample_index is not None:
            kept["sample_index"] = sample_index
        return cls(messages=messages, temperature=temperature, start_s=start_s, end_s=end_s, **kept)


# What a call's record keeps of its completion (neither its tool calls nor its group: the record is per sample).
_FROM_COMPLETION = {"text", "finish_reason", "usage", "latency_s", "cached", "sample_index"}


class AgentEvent(BaseModel):
    """What one sub-agent did: its input as written and as resolved, its calls, output and answer."""

    id: str
    type: str
    status: Literal["ok", "failed", "skipped"]
    input: str
    resolved_input: str | None = None
    output: str | None = None
    answer: str | None = None
    calls: list[LLMCall] = Field(default_factory=list)
    error: str | None = None
    start_s: float = 0.0
    latency_s: float = 0.0
    steps: list[dict[str, Any]] = Field(
        default_factory=list, description="Agent-specific steps (search queries, votes)."
    )


class PlanErrorRecord(BaseModel):
    rule: str
    message: str
    agent: str | None = None


class OrchestratorInfo(BaseModel):
    """How the plan was sampled."""

    backend: str
    model_id: str
    checkpoint: str = "base"
    degree: str = "dag"
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 0
    seed: int | None = None
    plan_seed: int | None = Field(
        None, description="The seed this plan was drawn with (absent in older traces: seed + sample_index)."
    )
    sample_index: int = 0
    constrained: bool = False
    prompt_id: str = ""


class ScoreRecord(BaseModel):
    """The task scorer's verdict on the final answer; `error` when the scorer itself failed."""

    value: float | None = None
    correct: bool | None = None
    error: str | None = None


class Trace(BaseModel):
    """One (question, plan) execution, complete enough to render, score, pair and re-execute."""

    version: int = TRACE_VERSION
    task: str
    split: str = "train"
    question_id: str
    question: str
    gold: str | None = None
    question_kind: str | None = None  # the task's kind for the question (metadata["kind"]), for breakdowns
    # `kind.template` of a templated question (world_qa), so best-of-N can tell held-out questions whose
    # template training saw from those whose template it never did
    question_template: str | None = None
    plan_index: int
    plan_text: str
    plan: Plan | None = None
    plan_error: PlanErrorRecord | None = None
    orchestrator: OrchestratorInfo
    plan_call: LLMCall | None = None
    executed: bool = False
    agents: list[AgentEvent] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    final_agent: str | None = None
    final_output: str | None = None
    final_answer: str | None = None
    score: ScoreRecord | None = None
    tokens: dict[str, TokenCount] = Field(default_factory=dict)
    # The model the sub-agents ran on (the plan's is in `orchestrator`); None in traces written before agents
    # could run on a model of their own, when it was always the orchestrator's.
    agent_backend: str | None = None
    agent_model_id: str | None = None
    wall_s: float = 0.0
    llm_busy_s: float = Field(0.0, description="Execution time with at least one sub-agent LLM call in flight.")

    @property
    def key(self) -> tuple[str, int]:
        return (self.question_id, self.plan_index)

    @property
    def valid(self) -> bool:
        return self.plan is not None and self.plan_error is None

    @property
    def agent_model(self) -> str:
        """The sub-agents' model id (the orchestrator's for a trace that does not record its own)."""
        return self.agent_model_id if self.agent_model_id is not None else self.orchestrator.model_id

    def agent_types(self) -> list[str]:
        return [a.type for a in self.plan.agents] if self.plan else []


def token_totals(plan_call: LLMCall | None, agents: list[AgentEvent]) -> dict[str, TokenCount]:
    out: dict[str, TokenCount] = {}
    if plan_call is not None:
        _count(out.setdefault("plan", TokenCount()), plan_call)
    for ev in agents:
        for call in ev.calls:
            _count(out.setdefault("execute", TokenCount()), call)
    return out


def _count(into: TokenCount, call: LLMCall) -> None:
    into.count(call.usage.prompt_tokens, call.usage.completion_tokens, call.cached, call.usage.cached_prompt_tokens)


class TraceWriter(JsonlWriter):
    """Appends traces to a JSONL file, one durable line per record."""

    def write(self, record: BaseModel) -> None:
        if not isinstance(record, Trace):
            raise TypeError(f"TraceWriter writes traces, not {type(record).__name__}")
        super().write(record)


def _parse_trace(value: Any) -> Trace:
    if not isinstance(value, dict) or value.get("version") != TRACE_VERSION:
        version = value.get("version") if isinstance(value, dict) else None
        raise RecordError(f"trace version {version!r}, this orchrm reads version {TRACE_VERSION}")
    return Trace.model_validate(value)


def read_traces(path: Path, *, repair: bool = False) -> list[Trace]:
    """Every trace in a JSONL file. A torn last line is skipped (and cut off the file when `repair`)."""
    return jsonl.read(path, _parse_trace, "trace", repair=repair)


def find_traces(folder: Path) -> Path | None:
    """A folder's traces file: `traces.jsonl`, else the gzipped `traces.jsonl.gz`, else None."""
    for path in (folder / TRACES_FILE, jsonl.gz_path(folder / TRACES_FILE)):
        if path.is_file():
            return path
    return None


def locate_traces(path: Path) -> Path:
    """A run folder or a traces file -> the traces file (`traces.jsonl`, else its `.gz`)."""
    if path.is_dir():
        path = find_traces(path) or path / TRACES_FILE
    elif not path.exists() and path.name == TRACES_FILE:
        path = find_traces(path.parent) or path
    if not path.exists():
        raise RunFileError(
            f"no traces at {path}", hint="pass a run folder made by `orchrm rollout` or its traces.jsonl"
        )
    return path
