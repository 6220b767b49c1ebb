"""The orchestrator and agent LLMs of a verb that runs plans: opened together, checked before any work."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from ..llm import DEFAULT_MODEL, LLM, FleetBackend, LocalBackend, close_llms, ensure_reachable, open_llms
from ..llm.factory import adapter_needs_local
from . import options as opt


@contextmanager
def run_llms(
    backend: str,
    model: str | None,
    base_url: str | None,
    *,
    orchestrator_adapter: Path | None = None,
    **options: Any,
) -> Iterator[tuple[LLM, LLM]]:
    """(orchestrator, agent) LLMs, both answering, closed on exit. A model that cannot answer is one line
    naming its role, raised before the caller reads a model id or writes anything. A fleet that failed
    requests over says so on stderr at the end, one line per role. `orchestrator_adapter` (a trained
    orchestrator's run folder, adapter or checkpoint) is checked and converted before any server starts."""
    adapter = None
    if orchestrator_adapter is not None:
        if backend != "local":
            raise adapter_needs_local()
        from ..grpo.adapter import served_adapter

        adapter = served_adapter(orchestrator_adapter, model or DEFAULT_MODEL)
    orchestrator, agent = open_llms(backend, model=model, base_url=base_url, orchestrator_adapter=adapter, **options)
    try:
        asyncio.run(_ping(orchestrator, agent))
        yield orchestrator, agent
    finally:
        _report_failovers(orchestrator, agent)
        close_llms(orchestrator, agent)


def open_models(
    models: opt.ModelOptions,
    *,
    cache: bool = True,
    orchestrator_adapter: Path | None = None,
) -> AbstractContextManager[tuple[LLM, LLM]]:
    """`run_llms` for a verb's model options."""
    return run_llms(
        models.backend,
        models.model,
        models.base_url,
        orchestrator_adapter=orchestrator_adapter,
        cache=cache,
        agent_backend=models.agent_backend,
        agent_model=models.agent_model,
        agent_base_url=models.agent_base_url,
        api_key_env=models.api_key_env,
        concurrency=models.concurrency,
        timeout_s=models.timeout,
    )


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


def checkpoint_label(llm: LLM, given: str | None) -> str:
    """The orchestrator checkpoint a run's traces are labelled with: the user's label, else the adapter's
    (`run:step-N`), else `base`."""
    if given is not None:
        return given
    backend = llm.backend
    return backend.adapter.name if isinstance(backend, LocalBackend) and backend.adapter is not None else "base"
