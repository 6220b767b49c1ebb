"""Settings of one orchestrator-training run: what GRPO on plans needs, nothing more.

Saved as `run.json` in the run folder; a resumed run must bring the same settings (only `max_steps` may
grow), because a checkpoint continues one optimisation, not another. The sampler may change too: it
decides how fast the plans are drawn, not from which policy (see sampler.py). How a plan is sampled (seed,
degree, temperature, top-p, token limit, prompt examples) is `PlanSampling`, the rollouts' own declaration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from ..mas.run_config import PlanSampling
from ..mas.run_folder import read_settings
from ..profiles import BASE
from ..rm.trackers import REPORT_TO_HELP, ReportTo

RewardKind = Literal["rm", "execute", "prior", "router", "valid", "custom"]
SamplerKind = Literal["trl", "server", "vllm"]
RESUMABLE = frozenset({"max_steps", "sampler", "report_to", "profile"})  # settings a resumed run may change


class GRPORunConfig(PlanSampling):
    """An orchestrator-training run: the plan sampling it trains under, plus GRPO's own settings."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="The task spec whose train split supplies the questions.")
    profile: str = Field(BASE, description="The named profile its settings were laid over (`orchrm.profiles`).")
    policy: str = Field(description="Embedded model name, GGUF path or transformers folder being trained.")
    policy_sha256: str = Field("", description="sha256 of the GGUF (or weights) the policy started from.")
    reward: RewardKind = Field(
        "rm",
        description="rm: the reward model scores each plan; execute: sub-agents run it, the task grades it; valid: "
        "1 for any valid plan (the baseline that learns only to write valid plans).",
    )
    rm_sha256: str = Field("", description="The reward model's weights, for --reward rm.")
    agent_model_id: str = Field("", description="The sub-agents' model, for --reward execute.")
    invalid_penalty: float = Field(-1.0, description="Reward of a plan the parser or validator rejects.")
    group_size: int = Field(4, ge=2, description="Plans sampled per question (GRPO's group).")
    questions_per_step: int = Field(
        1, ge=1, description="Questions per optimiser step (over all processes under accelerate launch)."
    )
    n_questions: int = Field(64, ge=1, description="Train-split questions in the prompt set.")
    max_steps: int = Field(100, ge=1, description="Optimiser steps in all (a resumed run may raise it).")
    save_steps: int = Field(10, ge=1, description="A checkpoint every K optimiser steps.")
    learning_rate: float = Field(2e-5, gt=0, description="Learning rate.")
    lora_r: int = Field(16, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(32, ge=1, description="LoRA alpha.")
    beta: float = Field(0.0, ge=0, description="KL coefficient against the base policy (0: no reference model).")
    entropy_coef: float = Field(
        0.0,
        ge=0,
        description="Entropy bonus in the loss (TRL's `entropy_coef`): keeps a group's plans from collapsing.",
    )
    diverse_draws: int = Field(
        1,
        ge=1,
        description="Draw this many times the group per question and keep the first plan of every valid shape "
        "drawn, then the earliest others (the server sampler; 1: the group is what was drawn).",
    )
    num_iterations: int = Field(1, ge=1, description="Optimisation passes per generated batch.")
    bf16: bool = Field(False, description="Train in bf16 (GPUs; converted weights are bf16 too).")
    sampler: SamplerKind = Field(
        "trl", description="Who samples the plans: TRL's generate, llama-server, or TRL's vLLM mode."
    )
    report_to: ReportTo = Field("none", description=REPORT_TO_HELP)

    @field_validator("temperature")
    @classmethod
    def _sampled(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("a GRPO group needs sampled plans: temperature must be above 0")
        return value

    def differences(self, old: GRPORunConfig) -> list[str]:
        """Settings that differ from a run being resumed (a larger `max_steps` extends it; the sampler may
        change)."""
        mine, theirs = self.model_dump(), old.model_dump()
        return [f"{k}: {theirs[k]!r} -> {mine[k]!r}" for k in mine if k not in RESUMABLE and mine[k] != theirs[k]]


def read_training_config(run: Path) -> GRPORunConfig:
    """The `GRPORunConfig` a training run folder was made with: the one reader of its `run.json`."""
    return read_settings(run, GRPORunConfig, "pass a run folder made by `orchrm train-orchestrator`")
