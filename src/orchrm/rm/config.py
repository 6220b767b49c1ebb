"""Reward-model training settings: what Bradley–Terry training on plan pairs needs, nothing more."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .backbone import DEFAULT_BACKBONE


class RMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backbone: str = Field(DEFAULT_BACKBONE, description="Embedded backbone name or a local transformers folder.")
    max_length: int = Field(256, ge=16, le=4096, description="Tokens of question + plan; longer is truncated.")
    epochs: int = Field(4, ge=1)
    batch_size: int = Field(8, ge=1)
    learning_rate: float = Field(5e-5, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    margins: dict[str, float] = Field(
        default_factory=dict, description="Per-source margin in the loss -logsigmoid(r_w - r_l - margin)."
    )
    center_rewards_coefficient: float | None = Field(
        0.01, description="Pulls mean reward toward 0 so scores are comparable across questions."
    )
    early_stopping_patience: int = Field(2, ge=1, description="Epochs without held-out accuracy gain before stopping.")
    lora: bool = Field(False, description="Train LoRA adapters (merged into the saved weights) for large backbones.")
    lora_r: int = Field(8, ge=1)
    bf16: bool = Field(False, description="bf16 autocast in training (faster on CPUs with AVX512-BF16, less exact).")
    seed: int = 0
    threads: int | None = Field(None, description="torch CPU threads (default: all cores).")
    device: Literal["cpu", "auto"] = Field(
        "cpu", description="Where training runs: the CPU, or 'auto' (an accelerator when one is present). The "
        "trained model is moved to the CPU either way.",
    )
