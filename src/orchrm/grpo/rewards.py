"""Rewards for sampled plans, as plain TRL reward functions.

`PlanReward` is what GRPO calls: it parses and validates each sampled plan the way the orchestrator does
at rollout, gives a rejected plan the fixed penalty (recorded with the rule it broke, never raised), and
hands the valid ones to a scorer: `RMScorer` (the orchestration RM reads (question, plan), no sub-agent
runs) or `ExecuteScorer` (the sub-agents run the plan and the task's scorer grades the answer). Every
sample is appended to `samples.jsonl` (its record: `orchrm.samples`) with its reward, so a run can be read
back plan by plan (under several processes each rewards its own shard, and `gather` brings the records to
the one process that writes them).
A scorer that fails on a plan records `error` and returns no reward (TRL's None), never a zero.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .. import jsonl
from ..completions import completion_text
from ..errors import BackendUnreachable, OrchrmError
from ..llm import LLM, TokenLedger, UsageRecord
from ..mas.executor import ExecutorConfig, execute_plan
from ..mas.orchestrator import check_plan
from ..mas.plans import Plan, PlanError
from ..rm.reward import RewardContract
from ..samples import SampleRecord, next_attempt
from ..tasks.base import Question, Task


@dataclass
class Scored:
    """A scorer's verdict on one valid plan: the reward, or the error that prevented one."""

    reward: float | None
    detail: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class PlanScorer(Protocol):
    name: str

    async def score(self, question: Question, plans: list[Plan]) -> list[Scored]: ...


@dataclass(eq=False, repr=False)  # TRL takes it as a function: equal only to itself, with a plain repr
class PlanReward:
    """The TRL reward function: fixed penalty for invalid plans, the scorer's reward for valid ones."""

    scorer: PlanScorer
    questions: dict[str, Question]
    _: KW_ONLY
    degree: str
    agent_types: tuple[str, ...]
    penalty: float = -1.0
    samples_path: Path | None = None
    # every process's records, in process order (processes.gathered)
    gather: Callable[[list[SampleRecord]], list[SampleRecord]] | None = None
    attempt: int = field(init=False)

    def __post_init__(self) -> None:
        # stamped on what this start of the run writes, so a repeat of a step after a resume supersedes it
        self.attempt = next_attempt(self.samples_path) if self.samples_path is not None else 0
        self.__name__ = self.scorer.name

    async def __call__(
        self,
        prompts: list,
        completions: list,
        question_id: list[str],
        trainer_state: Any = None,
        completion_ids: list | None = None,
        **_: Any,
    ) -> list[float | None]:
        step = int(getattr(trainer_state, "global_step", 0) or 0)
        texts = [completion_text(c) for c in completions]
        lengths = [len(c) for c in completion_ids] if completion_ids is not None else [None] * len(texts)
        records: list[SampleRecord] = []
        valid: dict[str, list[tuple[int, Plan]]] = defaultdict(list)
        for i, (text, qid, n) in enumerate(zip(texts, question_id, lengths, strict=True)):
            sample = {"step": step, "question_id": qid, "completion": text, "completion_tokens": n}
            try:
                plan = check_plan(text, degree=self.degree, agent_types=self.agent_types)
            except PlanError as exc:
                records.append(
                    SampleRecord(**sample, valid=False, rule=exc.rule, reason=exc.reason, reward=self.penalty)
                )
                continue
            records.append(SampleRecord(**sample, valid=True, reward=None))  # its reward comes from the scorer
            valid[qid].append((i, plan))
        verdicts = await asyncio.gather(
            *(self.scorer.score(self.questions[q], [p for _, p in ps]) for q, ps in valid.items())
        )
        for (_q, ps), scored in zip(valid.items(), verdicts, strict=True):
            for (i, _), s in zip(ps, scored, strict=True):
                records[i].reward, records[i].detail, records[i].error = s.reward, s.detail, s.error
        everyone = self.gather(records) if self.gather is not None else records
        if self.samples_path is not None:
            with jsonl.JsonlWriter(self.samples_path) as writer:
                for r in everyone:
                    writer.write(r.model_copy(update={"attempt": self.attempt}))
        return [r.reward for r in records]


class RMScorer:
    """The orchestration RM's opinion of each plan, on the reward contract's scale (`rm.reward`: `unit` squashes
    it by a sigmoid into (0, 1)), exactly what the TRL / verl / OpenRLHF adapters pay for the same plan.

    The squash keeps the RM's order within a question and puts every valid plan above a negative penalty,
    which a raw score (any real number) would not; the raw score is kept in the sample's detail."""

    name = "rm"

    def __init__(self, rm: Any, ledger: TokenLedger | None = None, contract: RewardContract | None = None) -> None:
        self.rm = rm
        self.ledger = ledger
        self.contract = contract or RewardContract()

    async def score(self, question: Question, plans: list[Plan]) -> list[Scored]:
        raw = self.rm.score(question.question, plans)
        # A decoder RM is an LLM forward pass the policy's size, so what it reads is counted under `verify`
        # (one call per plan); an encoder's (MiniLM, far smaller than the policy) is not an LLM call and is not.
        if self.ledger is not None and self.rm.card.backbone_kind == "decoder":
            model_id = f"rm:{self.rm.card.weights_sha256}"
            self.ledger.add(
                UsageRecord(
                    category="verify",
                    backend="transformers",
                    model_id=model_id,
                    prompt_tokens=n,
                    completion_tokens=0,
                    cached=False,
                )
                for n in self.rm.token_counts(question.question, plans)
            )
        return [Scored(reward=self.contract.value(r), detail={"rm_score": r}) for r in raw]


class PriorScorer:
    """The plan-shape prior's success rate for each plan (`bon.prior.ShapePrior`, fitted on training traces):
    a reward that reads only what a plan is, never what it says. The cheapest rule that could fake a learned
    RM as a reward, so RM-guided training is measured against it."""

    name = "prior"

    def __init__(self, prior: Any) -> None:
        self.prior = prior

    async def score(self, question: Question, plans: list[Plan]) -> list[Scored]:
        return [Scored(reward=(p := self.prior.lookup(plan)).value, detail={"grain": p.grain}) for plan in plans]


class RouterScorer:
    """The content-blind router's success probability for each plan (`bon.router.Router`: question words
    crossed with plan shape, fitted on training traces). It sees the question but never what a plan says, so it
    is the strongest cheap reward an RM-guided arm must beat; a shape it never saw falls back to the shape
    prior and the sample's detail says so."""

    name = "router"

    def __init__(self, router: Any) -> None:
        self.router = router

    async def score(self, question: Question, plans: list[Plan]) -> list[Scored]:
        looked = [self.router.lookup(question.question, plan) for plan in plans]
        return [Scored(reward=r.value, detail={"fallback": r.fallback}) for r in looked]


class ValidScorer:
    """1 for every plan that parses and passes the plan rules (invalid ones get `PlanReward`'s penalty): how
    much of a trained orchestrator's gain is writing valid plans rather than choosing good ones."""

    name = "valid"

    async def score(self, question: Question, plans: list[Plan]) -> list[Scored]:
        return [Scored(reward=1.0) for _ in plans]


class ExecuteScorer:
    """Each plan run by the sub-agents and graded by the task's scorer (its score in [0, 1])."""

    name = "execute"

    def __init__(self, task: Task, agent_llm: LLM, config: ExecutorConfig | None = None) -> None:
        self.task = task
        self.llm = agent_llm
        self.config = config

    async def score(self, question: Question, plans: list[Plan]) -> list[Scored]:
        return list(await asyncio.gather(*(self._one(question, p) for p in plans)))

    async def _one(self, question: Question, plan: Plan) -> Scored:
        try:
            ex = await execute_plan(plan, question.question, self.llm, retriever=self.task.corpus, config=self.config)
        except BackendUnreachable as exc:  # not a wrong plan: a zero reward here would train on the outage
            raise BackendUnreachable(
                f"the sub-agents' server stopped answering while scoring a plan: {exc}",
                hint=(
                    "the step stops; bring the server back and run the same command again: "
                    "training resumes from the last sealed checkpoint"
                ),
            ) from exc
        detail = {"final_answer": ex.final_answer, "agent_errors": ex.errors}
        try:
            value, ok = await asyncio.to_thread(self.task.correct, ex.final_answer, question)
        except OrchrmError as exc:
            return Scored(reward=None, detail=detail, error=f"{type(exc).__name__}: {exc}")
        return Scored(reward=float(value), detail={**detail, "correct": ok})
