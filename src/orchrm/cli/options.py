"""Options the verbs share (the LLM, the task, the rollout budgets), declared once so names and help never drift."""

from __future__ import annotations

from typing import Annotated

import typer

from ..llm import BACKENDS
from ..tasks import TASK_HELP

Backend = Annotated[str, typer.Option(help=f"One of: {', '.join(BACKENDS)}.")]
Model = Annotated[str | None, typer.Option(help="Embedded model name or .gguf path (local); served model name (openai).")]
BaseUrl = Annotated[str | None, typer.Option(help="OpenAI-compatible server URL, e.g. http://host:8000/v1 (openai backend).")]
ApiKeyEnv = Annotated[str, typer.Option(help="Environment variable holding the API key.")]
Concurrency = Annotated[int | None, typer.Option(help="Requests in flight (local: server slots).")]

TaskName = Annotated[str, typer.Option(help=f"The task: {TASK_HELP}.")]
Seed = Annotated[int, typer.Option(help="Seed for questions, plan sampling and sub-agents.")]
Degree = Annotated[str, typer.Option(help="direct, single or dag.")]
Constrained = Annotated[bool, typer.Option(help="Constrain plans with the plan JSON schema.")]
Temperature = Annotated[float, typer.Option(help="Orchestrator sampling temperature.")]
PlanMaxTokens = Annotated[int, typer.Option(help="Token limit of one plan.")]
AgentMaxTokens = Annotated[int, typer.Option(help="Token limit of one sub-agent call.")]
AgentMaxSamples = Annotated[int | None, typer.Option(help="Cap on self_consistency samples (plans ask; the budget decides).")]
AgentMaxRounds = Annotated[int | None, typer.Option(help="Cap on reflexion and debate rounds.")]
ParallelQuestions = Annotated[int, typer.Option(help="Questions in flight at once.")]
