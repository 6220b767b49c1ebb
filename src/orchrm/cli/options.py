"""Options the verbs share (the LLM, the task, the rollout budgets), declared once so names and help never drift."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from ..llm import BACKENDS
from ..mas.rollout import RunConfig
from ..tasks import TASK_HELP

#: Every rollout setting's default, as `RunConfig` declares it: the verbs that run plans (`rollout`, `bon`)
#: default to these, so a CLI default cannot drift from the config's. `orchrm demo` reads `LoopConfig`
#: instead, whose defaults differ on purpose (a hotter, shorter plan, short agent calls, capped samples and
#: rounds: sized for the embedded 0.5B on 2 CPU cores, where rollout's are for any served model).
RUN = RunConfig(task="")
#: Per-request timeout of the verbs that run plans: long, because a busy CPU is slow.
REQUEST_TIMEOUT_S = 3600.0

# Help panels (see cli/panels.py): what a run is (task, output, counts, seed) comes first, unpanelled; the
# settings most runs leave alone follow, grouped under these.
PLANS = "Plans"
MODELS = "Models and servers"
AGENTS = "Sub-agents"
OUTPUT = "Progress output"

Backend = Annotated[str, typer.Option(help=f"One of: {', '.join(BACKENDS)}.", rich_help_panel=MODELS)]
Model = Annotated[str | None, typer.Option(help="Embedded model name or .gguf path (local); served model name (openai).", rich_help_panel=MODELS)]
BaseUrl = Annotated[str | None, typer.Option(help="OpenAI-compatible server URL, e.g. http://host:8000/v1 (openai backend); several, comma-separated, are a fleet serving one model (least-loaded routing, failover).", rich_help_panel=MODELS)]

# Verbs that run plans name two roles: the orchestrator (writes plans; the old --backend/--model/--base-url
# names still work) and the sub-agents (default: the orchestrator's model, so one model stays the default).
OrchestratorBackend = Annotated[str, typer.Option("--backend", "--orchestrator-backend", help=f"The orchestrator's backend: {', '.join(BACKENDS)}.", rich_help_panel=MODELS)]
OrchestratorModel = Annotated[str | None, typer.Option("--model", "--orchestrator-model", help="The model that writes plans: embedded name or .gguf path (local); served name (openai).", rich_help_panel=MODELS)]
OrchestratorBaseUrl = Annotated[str | None, typer.Option("--base-url", "--orchestrator-base-url", help="The orchestrator's server, e.g. http://host:8000/v1 (openai backend); several, comma-separated, are a fleet (least-loaded routing, failover).", rich_help_panel=MODELS)]
OrchestratorAdapter = Annotated[Path | None, typer.Option(help="A trained orchestrator (a train-orchestrator run folder, its adapter/ or a checkpoints/checkpoint-N) that writes the plans; sub-agents stay the base model (local backend).", rich_help_panel=PLANS)]
PromptExamples = Annotated[bool, typer.Option("--prompt-examples/--no-prompt-examples", help="Worked example plans in the orchestrator's prompt (off: the bare instructions, as for an orchestrator trained from scratch).", rich_help_panel=PLANS)]
Checkpoint = Annotated[str | None, typer.Option(help="Label of the orchestrator checkpoint in the traces (default: the adapter's run:step-N, else base).", rich_help_panel=PLANS)]
AgentBackend = Annotated[str | None, typer.Option(help="The sub-agents' backend (default: the orchestrator's).", rich_help_panel=MODELS)]
AgentModel = Annotated[str | None, typer.Option(help="The model that runs the sub-agents (default: the orchestrator's; with the local backend, a second llama-server).", rich_help_panel=MODELS)]
AgentBaseUrl = Annotated[str | None, typer.Option(help="The sub-agents' server (default: the orchestrator's when the backend is the same); several, comma-separated, are a fleet.", rich_help_panel=MODELS)]
ApiKeyEnv = Annotated[str, typer.Option(help="Environment variable holding the API key.", rich_help_panel=MODELS)]
Concurrency = Annotated[int | None, typer.Option(help="Requests in flight (local: server slots; a fleet: per endpoint).", rich_help_panel=MODELS)]

TaskName = Annotated[str, typer.Option(help=f"The task: {TASK_HELP}.")]
Seed = Annotated[int, typer.Option(help="Seed for questions, plan sampling and sub-agents.")]
Degree = Annotated[str, typer.Option(help="direct, single or dag.", rich_help_panel=PLANS)]
Constrained = Annotated[bool, typer.Option(help="Constrain plans with the plan JSON schema.", rich_help_panel=PLANS)]
Temperature = Annotated[float, typer.Option(help="Orchestrator sampling temperature.", rich_help_panel=PLANS)]
PlanMaxTokens = Annotated[int, typer.Option(help="Token limit of one plan.", rich_help_panel=PLANS)]
AgentMaxTokens = Annotated[int, typer.Option(help="Token limit of one sub-agent call.", rich_help_panel=AGENTS)]
AgentMaxSamples = Annotated[int | None, typer.Option(help="Cap on self_consistency samples (plans ask; the budget decides).", rich_help_panel=AGENTS)]
AgentMaxRounds = Annotated[int | None, typer.Option(help="Cap on reflexion and debate rounds.", rich_help_panel=AGENTS)]
AgentContext = Annotated[
    Literal["final", "all", "none"], typer.Option(help="Which sub-agents see the original question.", rich_help_panel=AGENTS)
]
ParallelQuestions = Annotated[int, typer.Option(help="Questions in flight at once.", rich_help_panel=MODELS)]

# Output of long commands (see cli/progress.py): bars on a terminal, heartbeat lines elsewhere.
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output (errors and the final result only).", rich_help_panel=OUTPUT)]
Json = Annotated[bool, typer.Option("--json", help="Progress as JSON lines on stderr; the result as one JSON object on stdout.", rich_help_panel=OUTPUT)]
LogEvery = Annotated[float, typer.Option(help="Seconds between progress lines when stderr is not a terminal.", rich_help_panel=OUTPUT)]
