"""The orchestrator and agent LLMs of a verb that runs plans: opened together, checked before any work."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..llm import LLM, FleetBackend, close_llms, ensure_reachable, open_llms


@contextmanager
def run_llms(backend: str, model: str | None, base_url: str | None, **options: object) -> Iterator[tuple[LLM, LLM]]:
    """(orchestrator, agent) LLMs, both answering, closed on exit. A model that cannot answer is one line
    naming its role, raised before the caller reads a model id or writes anything. A fleet that failed
    requests over says so on stderr at the end, one line per role."""
    orchestrator, agent = open_llms(backend, model=model, base_url=base_url, **options)  # type: ignore[arg-type]
    try:
        asyncio.run(_ping(orchestrator, agent))
        yield orchestrator, agent
    finally:
        _report_failovers(orchestrator, agent)
        close_llms(orchestrator, agent)


def _report_failovers(orchestrator: LLM, agent: LLM) -> None:
    roles = {"orchestrator": orchestrator} if agent is orchestrator else {"orchestrator": orchestrator, "agent": agent}
    for role, llm in roles.items():
        line = llm.backend.summary_line() if isinstance(llm.backend, FleetBackend) else None
        if line:
            print(f"{role} {line}", file=sys.stderr)


async def _ping(orchestrator: LLM, agent: LLM) -> None:
    await ensure_reachable(orchestrator, "orchestrator")
    if agent is not orchestrator:
        await ensure_reachable(agent, "agent")
