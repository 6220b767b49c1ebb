"""Reward-model training settings: what Bradley–Terry training on plan pairs needs, nothing more.

A decoder backbone (an embedded LLM such as qwen2.5-coder-0.5b) takes other defaults than an encoder: the
settings not given explicitly come from `DECODER_DEFAULTS`, so `RMConfig(backbone="qwen2.5-coder-0.5b")`
is a sensible run on 2 CPU cores as it stands, and the card records the resolved values.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .backbone import DEFAULT_BACKBONE, backbone_kind
from .trackers import REPORT_TO_HELP, ReportTo

#: Defaults for a 0.5B decoder trained on CPU, where every token of a step is paid forward and backward
#: (what the decoder costs against the encoder: bench/rm_backbones.py, bench/results/rm_backbones.json).
#: - max_length 256: the encoder's own limit, so both backbones read the same text; most committed (question,
#:   plan) texts fit in it;
#: - batch_size 4 pairs (8 sequences, at most 2,048 tokens a step): padding to each batch's longest adds little
#:   over smaller batches, and the activations stay small beside a CPU machine's memory;
#: - learning_rate 1e-4: LoRA wants a larger rate than full fine-tuning (TRL's PEFT guide); not tuned here;
#: - epochs 2: an epoch is slow on a CPU, and LoRA RMs settle in one or two;
#: - lora: always (the saved folder holds the adapter and the value head, never a copy of the base).
DECODER_DEFAULTS: dict[str, Any] = {
    "max_length": 256,
    "batch_size": 4,
    "learning_rate": 1e-4,
    "epochs": 2,
    "lora": True,
}


class RMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backbone: str = Field(
        DEFAULT_BACKBONE,
        description="Encoder (all-minilm-l6-v2, a local folder) or decoder LLM (qwen2.5-coder-0.5b, a .gguf, a local "
        "causal-LM folder): a decoder trains a LoRA adapter and a value head.",
    )
    max_length: int = Field(
        256, ge=16, le=4096, description="Tokens of question + plan, longer is truncated. Default 256."
    )
    epochs: int = Field(4, ge=1, description="Training epochs. Default 4 for an encoder, 2 for a decoder.")
    batch_size: int = Field(8, ge=1, description="Pairs a step. Default 8 for an encoder, 4 for a decoder.")
    learning_rate: float = Field(
        5e-5, gt=0, description="Learning rate. Default 5e-5 for an encoder, 1e-4 (LoRA) for a decoder."
    )
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    warmup_ratio: float = Field(
        0.1, ge=0, lt=1, description="Share of the training steps that warm the learning rate up."
    )
    margins: dict[str, float] = Field(
        default_factory=dict, description="Per-source margin in the loss -logsigmoid(r_w - r_l - margin)."
    )
    center_rewards_coefficient: float | None = Field(
        0.01,
        description="Reward-centring coefficient (0 = off): pulls mean reward toward 0 so scores are comparable "
        "across questions.",
    )
    early_stopping_patience: int = Field(
        2, ge=1, description="Early stopping: epochs without held-out accuracy gain before stopping."
    )
    lora: bool = Field(
        False,
        description="Train LoRA adapters: merged into an encoder's saved weights; a decoder always trains them and "
        "saves only the adapter and the value head.",
    )
    lora_r: int = Field(8, ge=1, description="LoRA rank.")
    bf16: bool = Field(False, description="bf16 autocast in training (faster on CPUs with AVX512-BF16, less exact).")
    seed: int = Field(0, description="Seed of the new head's weights and of the training order.")
    threads: int | None = Field(None, description="torch CPU threads (default: all cores).")
    device: Literal["cpu", "auto", "cuda"] = Field(
        "cpu",
        description="Where training runs: the CPU, 'auto' (an accelerator when one is present) or 'cuda' (a GPU, "
        "else a one-line error). The trained model is moved to the CPU either way.",
    )
    report_to: ReportTo = Field("none", description=REPORT_TO_HELP)

    @field_validator("center_rewards_coefficient")
    @classmethod
    def _zero_is_off(cls, value: float | None) -> float | None:
        """A coefficient of 0 is no centring: recorded as None, as TRL takes it."""
        return value or None

    @model_validator(mode="after")
    def _decoder_defaults(self) -> RMConfig:
        """A decoder backbone's defaults for every setting of `DECODER_DEFAULTS` not given explicitly."""
        if self.backbone != DEFAULT_BACKBONE and backbone_kind(self.backbone) == "decoder":
            for name, value in DECODER_DEFAULTS.items():
                if name not in self.model_fields_set:
                    setattr(self, name, value)
        return self
