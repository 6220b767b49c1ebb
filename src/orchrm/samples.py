"""`samples.jsonl`, the one owner of its contract: every plan orchestrator training (GRPO) sampled, as the
reward saw it. `grpo.rewards` writes it; the viewer reads it here without loading the training stack.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from . import jsonl

SAMPLES_FILE = "samples.jsonl"


class SampleRecord(BaseModel):
    """One sampled plan as training saw it."""

    step: int
    question_id: str
    completion: str
    completion_tokens: int | None = Field(None, description="The completion's length in tokens, as sampled.")
    valid: bool
    rule: str | None = Field(None, description="The plan rule broken, for an invalid plan.")
    reason: str | None = None
    reward: float | None
    detail: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


def read_samples(folder: Path) -> list[SampleRecord]:
    """Every record of a training run folder's `samples.jsonl`, in file order."""
    return jsonl.read(folder / SAMPLES_FILE, SampleRecord.model_validate, "sample record")
