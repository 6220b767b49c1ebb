"""The typed results of a best-of-N run: what `results.json` holds, and what the report and the CLI read.

`BonResults.dump()` is exactly the JSON the run writes (its keys and their order are a contract: benchmarks
read the file by key), and `read_results` reads one back, so a report can be redrawn from the file alone. A
best-of-N folder's `results.json` and `per_question.jsonl` are declared here, with their readers (`read_results`,
`read_per_question`) that the viewer and the benchmarks use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .. import jsonl, safejson
from ..atomic import write_text_atomic
from ..errors import RunFileError
from ..folders import stamp_folder
from .blind import BaselinesInfo
from .bootstrap import Interval
from .config import BonConfig
from .content import ContentStats

RESULTS_FILE = "results.json"
PER_QUESTION_FILE = "per_question.jsonl"
#: Fields results gained after they were first written: a file from before one reads without it (its default)
#: and dumps without it.
_LATER = ("router_fallbacks", "auc", "content", "per_kind", "notes")


class Tokens(BaseModel):
    """Mean tokens per question by category, and their sum."""

    plan: float
    execute: float
    verify: float
    total: float


class MethodSummary(BaseModel):
    """One method over every question: accuracy with its interval, mean tokens, plans run, wall time."""

    accuracy: Interval
    tokens: Tokens
    executed_plans: float
    wall_s: float


class SweepPoint(BaseModel):
    """rm-adaptive at one margin; `tau` None is the execute-all end of the sweep."""

    tau: float | None
    accuracy: Interval
    tokens: Tokens
    executed_plans: float
    wall_s: float


class CurvePoint(BaseModel):
    """A method's accuracy and total tokens per question at one N."""

    accuracy: Interval
    tokens: float


class Auc(Interval):
    """Within-question AUC of a method's score, over the `n_questions` questions with mixed outcomes."""

    n_questions: int


class RMInfo(BaseModel):
    """The reward model the run scored plans with."""

    path: str
    backbone: str
    tasks: list[str]
    weights_sha256: str | None = None


class RunInfo(BaseModel):
    """What the run was: task, models, RM, rollout settings. Only the fields given are written."""

    task: str
    model: str | None = None  # the identity (a GGUF's is its sha256): what the response cache keys by
    agent_model: str | None = None
    model_name: str | None = None  # the name a person knows it by (`qwen2.5-coder-0.5b`), shown beside `model`
    agent_model_name: str | None = None
    rm: RMInfo | None = None
    rollout: dict[str, Any] | None = None
    warnings: list[str] = Field(default_factory=list)
    prior: dict[str, Any] | None = None
    baselines: BaselinesInfo | None = None  # kind-prior and router, fitted with the prior


class TemplateGroup(BaseModel):
    """Held-out questions whose template training saw, or never did: each method's accuracy, and rm against the
    best content-blind selector (chosen within the group) and against shape-mean, paired within the group."""

    questions: int
    accuracy: dict[str, float]
    marks: dict[str, Interval | str]


class BonResults(RunInfo):
    """Every method's results at N, the marks, AUCs, per-kind accuracy, the adaptive sweep and the curves."""

    n: int
    questions: int
    plans: int
    valid_plans_per_question: float
    questions_without_valid_plan: int
    reward_std: float
    config: BonConfig
    methods: dict[str, MethodSummary]
    marks: dict[str, Interval | str]  # intervals, and `best_trivial`, `best_content_blind`: names of methods
    router_fallbacks: int | None = None  # valid plans whose shape the router never saw (scored by the prior)
    auc: dict[str, Auc] = Field(default_factory=dict)
    content: ContentStats | None = None  # same-shape pairs, content headroom, each score's same-shape AUC
    per_kind: dict[str, dict[str, int | float]] = Field(default_factory=dict)  # kind -> method -> accuracy, and "n"
    # "seen" / "unseen": only when training traces carry templates and some held-out template is new to them
    by_template: dict[str, TemplateGroup] | None = None
    notes: list[str] = Field(default_factory=list)
    adaptive_sweep: list[SweepPoint]
    curves: dict[str, dict[str, CurvePoint]]  # method -> N (as a string) -> point

    def mark(self, key: str) -> Interval | None:
        m = self.marks.get(key)
        return m if isinstance(m, Interval) else None

    @property
    def best_trivial(self) -> str | None:
        b = self.marks.get("best_trivial")
        return b if isinstance(b, str) else None

    @property
    def best_content_blind(self) -> str | None:
        b = self.marks.get("best_content_blind")
        return b if isinstance(b, str) else None

    def dump(self) -> dict[str, Any]:
        """The JSON form: the run fields that were never given are left out, as they always were."""
        unset = {k for k in RunInfo.model_fields if k not in self.model_fields_set}
        if self.by_template is None:  # results written before templates were recorded keep their exact keys
            unset.add("by_template")
        unset |= {k for k in _LATER if k not in self.model_fields_set}  # as do those from before these fields
        return self.model_dump(exclude=unset)


def write_results(folder: Path, results: BonResults, rows: list[dict[str, Any]]) -> None:
    """`results.json` and `per_question.jsonl` (one row per question), each written atomically."""
    write_text_atomic(folder / RESULTS_FILE, json.dumps(results.dump(), indent=2) + "\n")
    write_text_atomic(folder / PER_QUESTION_FILE, "".join(json.dumps(r) + "\n" for r in rows))
    stamp_folder(folder, "bon")


def read_results(path: Path) -> BonResults:
    """A best-of-N folder's results (`path` is the folder, or its `results.json`); a missing, unreadable or
    invalid file is a `RunFileError`."""
    path = path / RESULTS_FILE if path.is_dir() else path
    try:
        return safejson.read_model(path, BonResults, "(results)")
    except safejson.InvalidFile as exc:
        raise RunFileError(f"{path}: not a best-of-N results file ({exc})") from None


def read_per_question(folder: Path) -> list[dict[str, Any]]:
    """A best-of-N folder's `per_question.jsonl`: one row per question, each with its `question_id` (none when
    the run has not written it yet)."""
    return jsonl.read(folder / PER_QUESTION_FILE, _row, "per-question row")


def _row(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("question_id"), str):
        raise jsonl.RecordError("a per-question row needs a question_id")
    return value
