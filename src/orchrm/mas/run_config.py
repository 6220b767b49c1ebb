"""The settings of a rollout, each declared once, with its help: the leaf every other config and CLI option reads.

Three layers, each adding what its users need and nothing they do not:
- `PlanSampling`: how the orchestrator samples a plan (seed, degree, temperature, top-p, token limit,
  prompt examples). Rollouts and orchestrator training (`grpo.GRPORunConfig`) share it.
- `RolloutSettings`: plus how the sampled plans are executed (constrained decoding, the sub-agents' budgets).
  The loop (`LoopConfig.rollout`), best-of-N's held-out rollout and `orchrm rollout` share it.
- `RunConfig`: plus what makes one run folder (task, split, counts, models, version): its `run.json`.

Each field's `description` is the help text of the CLI option that sets it (`cli/options.py` builds the
options from these fields), so a setting's name, default and help are written here and nowhere else: the
orchestrator's `OrchestratorConfig` holds a `RolloutSettings`, and the sub-agents' `AgentSettings` (which the
executor's `ExecutorConfig` holds) is a view of one, so neither has a default of its own. The module imports
nothing from the rest of `mas`: plans, agents and the orchestrator build on it, not it on them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

#: 3: a question's plans are sampled in one request, seeds base + i with base hashed from the question;
#: 2: each plan seeded from (question, index), a request each; 1: seed + plan index (`OrchestratorConfig.seeds`).
RUN_VERSION = 3

Degree = Literal["direct", "single", "dag"]
AgentContext = Literal["final", "all", "none"]


class PlanSampling(BaseModel):
    """How the orchestrator samples a plan."""

    seed: int = Field(0, description="Seed for questions, plan sampling and sub-agents.")
    degree: Degree = Field("dag", description="Plan shape: direct (no agents), single (one agent) or dag (any plan).")
    temperature: float = Field(0.8, ge=0, description="Orchestrator sampling temperature.")
    top_p: float = Field(0.95, gt=0, le=1, description="Orchestrator nucleus sampling mass.")
    plan_max_tokens: int = Field(400, ge=8, description="Token limit of one plan.")
    prompt_examples: bool = Field(
        True,
        description=(
            "Worked example plans in the orchestrator's prompt (off: the bare instructions, as for an "
            "orchestrator trained from scratch)."
        ),
    )


class RolloutSettings(PlanSampling):
    """How plans are sampled and executed: everything a rollout needs but the task, the counts and the models."""

    constrained: bool = Field(False, description="Constrain plans with the plan JSON schema.")
    agent_max_tokens: int = Field(384, ge=1, description="Token limit of one sub-agent call.")
    agent_temperature: float = Field(0.0, ge=0, description="Sub-agents' sampling temperature.")
    agent_sample_temperature: float = Field(0.7, ge=0, description="Temperature of self_consistency's samples.")
    agent_timeout_s: float = Field(900.0, gt=0, description="Seconds one sub-agent may run.")
    agent_max_samples: int | None = Field(
        None, ge=2, description="Cap on self_consistency samples (plans ask; the budget decides)."
    )
    agent_max_rounds: int | None = Field(None, ge=1, description="Cap on reflexion and debate rounds.")
    agent_context: AgentContext = Field("final", description="Which sub-agents see the original question.")


class RunConfig(RolloutSettings):
    """What a run folder was made with; a resumed run must match it (counts may grow)."""

    version: int = Field(RUN_VERSION, description="How the run seeds its plans (see RUN_VERSION).")
    task: str = Field(description="The task spec the questions come from.")
    split: Literal["train", "test"] = Field("train", description="train or test (splits are by question).")
    n_questions: int = Field(10, ge=1, description="Questions to draw from the split.")
    skip_questions: int = Field(
        0, ge=0, description="Questions of the split passed over first (held out from what chose a model earlier)."
    )
    n_plans: int = Field(4, ge=1, description="Plans sampled per question.")
    execute: Literal["none", "all"] = Field(
        "all", description="all: execute every valid plan; none: only sample plans."
    )
    backend: str = Field("local", description="The orchestrator's backend.")
    model_id: str = Field("", description="The orchestrator's model.")
    agent_backend: str = Field("", description="The sub-agents' backend; empty: the orchestrator's.")
    agent_model_id: str = Field("", description="The sub-agents' model; empty: the orchestrator's.")
    # names as a person knows them (`Backend.display_name`), labels beside the ids: a resume compares the ids
    model_name: str = Field("", description="The orchestrator's model by name (registry name), beside model_id.")
    agent_model_name: str = Field("", description="The sub-agents' model by name; empty: the orchestrator's.")
    checkpoint: str = Field("base", description="Label of the orchestrator checkpoint in the traces.")
    profile: str = Field("base", description="The named profile its settings were laid over (`orchrm.profiles`).")
