"""The listwise judge baseline: the Skill-RM evaluator picks one of a question's executed plans.

`judgments.jsonl` holds one `JudgeRecord` per (question, N), appended as it finishes, so an interrupted run
resumes. Each record keeps the judge's reason, flags (every fallback that happened), errors and confidence
beside its pick, so the baseline can be audited after the run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from .. import jsonl
from ..evidence import EvaluatorConfig, Judgment, SkillEvaluator, trajectory_response
from ..llm import LLM
from ..mas.traces import Trace
from .config import BonConfig

JUDGMENTS_FILE = "judgments.jsonl"
#: The `Judgment` fields a record keeps as they are (the rest are mapped from response to plan indices).
_KEPT = ("prompt_tokens", "completion_tokens", "status", "confidence", "reason", "flags", "errors")


class JudgeRecord(BaseModel):
    """The listwise judge's pick among one question's first `n` plans (the valid, executed ones)."""

    question_id: str
    n: int
    key: str
    best: int | None  # plan index
    scores: dict[str, float | None] = Field(default_factory=dict)  # plan index -> score
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    status: str = "ok"
    # the judge's account of itself; records written before these were kept load with them empty
    confidence: float = 0.0
    reason: str = ""
    flags: list[str] = Field(default_factory=list, description="Every fallback that happened, per response.")
    errors: list[str] = Field(default_factory=list, description="Evidence that errored (never read as a score).")

    @classmethod
    def of(cls, question_id: str, n: int, key: str, plans: list[Trace], j: Judgment, wall_s: float) -> JudgeRecord:
        """The record of judgment `j` over `plans` (the judge's response indices mapped to plan indices)."""
        best = plans[j.best].plan_index if j.best is not None else None
        scores = {str(t.plan_index): s for t, s in zip(plans, j.scores, strict=False)}
        kept = {name: getattr(j, name) for name in _KEPT}
        return cls(question_id=question_id, n=n, key=key, best=best, scores=scores, wall_s=wall_s, **kept)


def read_judgments(path: Path) -> list[JudgeRecord]:
    """Every judgment in the file; a torn last line (a killed run) is dropped and cut off."""
    return jsonl.read(path, JudgeRecord.model_validate, "judgment", repair=True)


def judgeable(plans: list[Trace]) -> list[Trace]:
    """The plans the judge sees: valid and executed."""
    return [t for t in plans if t.valid and t.executed]


def judge_evaluator(llm: LLM, config: BonConfig) -> SkillEvaluator:
    return SkillEvaluator(
        llm, config=EvaluatorConfig(max_steps=config.judge_max_steps, max_tokens=config.judge_max_tokens)
    )


class JudgeQueue:
    """The listwise judge on questions as their plans come in: `submit` starts a question's judgments at once (at
    most `config.judge_concurrency` questions judged together), so the judge shares the model's slots with the
    rollout still running instead of waiting for its last plan; `finish` submits whatever was not submitted, waits
    for every judgment and returns the file's records with this key. What is judged, with which plans and
    settings, is what judging after the rollout judged: one judgment per (question, N) over its first N plans,
    none for one already in the file or with fewer than two judgeable plans. `on_progress(done, total)` counts
    the (question, N) expected for the questions named by `expect` (a skipped one counts as done)."""

    def __init__(
        self,
        evaluator: SkillEvaluator,
        config: BonConfig,
        path: Path,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.evaluator, self.config, self.path, self.on_progress = evaluator, config, path, on_progress
        self.key = config.judge_key()
        self._have = {(r.question_id, r.n) for r in read_judgments(path) if r.key == self.key}
        self._seen: set[tuple[str, int]] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._sem = asyncio.Semaphore(config.judge_concurrency)
        self.done = self.total = 0

    def expect(self, question_ids: list[str], n_plans: int) -> None:
        """The (question, N) still to judge among these questions, as the progress total (first reported when the
        first question comes in: the judge's line starts when judging does)."""
        ns = self.config.judged_ns(n_plans)
        self.total = sum((q, n) not in self._have for q in question_ids for n in ns)

    def submit(self, question_id: str, plans: list[Trace]) -> None:
        """Judge a question whose plans are all in: `plans` are its first N, in plan order."""
        for n in self.config.judged_ns(len(plans)):
            if (question_id, n) in self._have or (question_id, n) in self._seen:
                continue
            if not self._seen:
                self._report()  # the first judgment starts
            self._seen.add((question_id, n))
            if len(judgeable(plans[:n])) < 2:
                self._count()  # nothing to judge: counted as done, as the total counted it
                continue
            self._tasks.append(asyncio.create_task(self._one(question_id, n, judgeable(plans[:n]))))

    async def finish(self, grouped: dict[str, list[Trace]]) -> list[JudgeRecord]:
        """Every question of `grouped` judged (those not submitted yet now); the records with this key."""
        for q, plans in grouped.items():
            self.submit(q, plans)
        try:
            await asyncio.gather(*self._tasks)
        finally:
            self.cancel()
        if not self._seen:
            self._report()  # nothing was left to judge: said once
        return [r for r in read_judgments(self.path) if r.key == self.key]

    def cancel(self) -> None:
        """Stop the judgments still running (the rollout beside them failed); finished ones are in the file."""
        for task in self._tasks:
            task.cancel()

    async def _one(self, q: str, n: int, plans: list[Trace]) -> None:
        async with self._sem:
            start = time.perf_counter()
            responses = [trajectory_response(t) for t in plans]
            j = await self.evaluator.alistwise(plans[0].question, responses, kind="trajectory")
            wall = time.perf_counter() - start
        jsonl.append(self.path, JudgeRecord.of(q, n, self.key, plans, j, wall))
        self._count()

    def _count(self) -> None:
        self.done += 1
        self.total = max(self.total, self.done)
        self._report()

    def _report(self) -> None:
        if self.on_progress:
            self.on_progress(self.done, self.total)


async def judge_missing(
    evaluator: SkillEvaluator,
    grouped: dict[str, list[Trace]],
    config: BonConfig,
    path: Path,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[JudgeRecord]:
    """Run the listwise judge on every (question, N) that has no judgment yet; append each as it finishes."""
    queue = JudgeQueue(evaluator, config, path, on_progress)
    queue.expect(list(grouped), max((len(p) for p in grouped.values()), default=0))
    return await queue.finish(grouped)
