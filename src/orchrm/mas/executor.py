"""The executor: runs a validated plan's agents in topological order, independent ones concurrently.

Each agent gets its input with `${id}` replaced by the upstream agent's answer (its output when it gave no
answer); the final agent also sees the original question (`AgentSettings.question_context`). An agent
that fails (an LLM error, a timeout, a missing corpus) is recorded with its error and the calls it made;
agents downstream of it are skipped, others keep running. The final answer is the sink's answer; a failed
sink means no answer. Exceptions that are not `OrchrmError`s are bugs and propagate.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from dataclasses import dataclass, field

from ..errors import BackendUnreachable, OrchrmError
from ..llm import LLM
from .agents import AGENTS, AgentResult, AgentRun, AgentSettings, Retriever
from .plans import REFERENCE, AgentSpec, Plan, topological_order
from .traces import AgentEvent


@dataclass
class Execution:
    """The outcome of one plan: per-agent events in topological order, the sink's answer, timing."""

    agents: list[AgentEvent] = field(default_factory=list)
    final_agent: str | None = None
    final_output: str | None = None
    final_answer: str | None = None
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    llm_busy_s: float = 0.0


@dataclass
class ExecutorConfig:
    """How plans execute: the sub-agents' settings (their budgets and timeout, declared on `RolloutSettings`), how
    many agents run at once, and how much of an upstream output a downstream input quotes."""

    settings: AgentSettings = field(default_factory=AgentSettings)
    max_parallel: int = 4
    output_chars: int = 1500


def resolve_input(text: str, outputs: dict[str, str], limit: int) -> str:
    """The input with each `${id}` replaced by what that agent passes on (its last `limit` characters)."""

    def sub(m: re.Match[str]) -> str:
        out = outputs[m.group(1)]
        return out if len(out) <= limit else "..." + out[-limit:]

    return REFERENCE.sub(sub, text)


def busy_time(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end] intervals."""
    total, reached = 0.0, -math.inf
    for start, end in sorted(intervals):
        total += max(0.0, end - max(start, reached))  # only the part past what earlier intervals covered
        reached = max(reached, end)
    return total


async def execute_plan(
    plan: Plan,
    question: str,
    llm: LLM,
    *,
    retriever: Retriever | None = None,
    config: ExecutorConfig | None = None,
) -> Execution:
    """Run a validated plan. A plan with no agents (a direct answer) executes to its own answer."""
    cfg = config or ExecutorConfig()
    if not plan.agents:
        return Execution(final_answer=plan.answer, final_output=plan.answer)
    run = _PlanRun(plan, question, llm, retriever, cfg)
    await asyncio.gather(*(run.agent(a) for a in run.order))
    ordered = [run.events[a] for a in run.order]
    sink = run.events[run.sink]
    ex = Execution(
        agents=ordered,
        final_agent=run.sink,
        errors=[f"{e.id}: {e.error}" for e in ordered if e.error],
        wall_s=time.perf_counter() - run.t0,
        llm_busy_s=busy_time([(c.start_s, c.end_s) for e in ordered for c in e.calls]),
    )
    if sink.status == "ok":
        ex.final_output = sink.output
        ex.final_answer = sink.answer
    else:
        ex.errors.append(f"the final agent {run.sink!r} gave no answer")
    return ex


class _PlanRun:
    """One execution of a plan: every agent waits for its upstream ones, then runs under the parallel limit."""

    def __init__(self, plan: Plan, question: str, llm: LLM, retriever: Retriever | None, cfg: ExecutorConfig) -> None:
        self.plan, self.question, self.llm, self.retriever, self.cfg = plan, question, llm, retriever, cfg
        self.t0 = time.perf_counter()
        self.order = topological_order(plan)
        self.sink = plan.sink()
        self.sem = asyncio.Semaphore(cfg.max_parallel)
        self.events: dict[str, AgentEvent] = {}
        self.outputs: dict[str, str] = {}
        self.done: dict[str, asyncio.Event] = {a: asyncio.Event() for a in self.order}

    async def agent(self, agent_id: str) -> None:
        """Run one agent once its upstream agents are done; skipped when one of them failed."""
        spec = self.plan.agent(agent_id)
        upstream = self.plan.upstream(agent_id)
        try:
            for up in upstream:
                await self.done[up].wait()
            failed = [up for up in upstream if self.events[up].status != "ok"]
            if failed:
                self.events[agent_id] = AgentEvent(
                    id=agent_id,
                    type=spec.type,
                    status="skipped",
                    input=spec.input,
                    error=f"upstream agent {', '.join(failed)} produced no output",
                )
                return
            self.events[agent_id] = await self._run(
                agent_id, spec, resolve_input(spec.input, self.outputs, self.cfg.output_chars)
            )
        finally:
            self.done[agent_id].set()

    async def _run(self, agent_id: str, spec: AgentSpec, resolved: str) -> AgentEvent:
        """Run one agent under the parallel limit and its timeout; an `OrchrmError` is the event's error."""
        timeout = self.cfg.settings.timeout_s
        result: AgentResult | None = None
        error: str | None = None
        async with self.sem:
            run = AgentRun(
                llm=self.llm,
                question=self.question,
                task_input=resolved,
                settings=self.cfg.settings,
                retriever=self.retriever,
                is_final=agent_id == self.sink,
                t0=self.t0,
            )
            start = time.perf_counter() - self.t0
            agent = AGENTS[spec.type](spec)
            try:
                result = await asyncio.wait_for(agent.run(run), timeout=timeout)
            except TimeoutError:
                error = f"timed out after {timeout:g}s"
            except BackendUnreachable:
                raise  # the server is gone, not the plan at fault: the run stops and resumes, no "failed" trace
            except OrchrmError as exc:
                error = f"{type(exc).__name__}: {exc}"
            latency = time.perf_counter() - self.t0 - start
        if result is not None:
            # Downstream agents get the answer alone when there is one: "the population of ${city}" reads as
            # a sub-task a small model can do, where the whole reasoning pasted in reads as another question.
            self.outputs[agent_id] = result.answer if result.answer else result.output
        return AgentEvent(
            id=agent_id,
            type=spec.type,
            status="failed" if result is None else "ok",
            input=spec.input,
            resolved_input=resolved,
            output=None if result is None else result.output,
            answer=None if result is None else result.answer,
            calls=run.calls,
            steps=run.steps,
            error=error,
            start_s=start,
            latency_s=latency,
        )
