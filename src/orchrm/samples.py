"""`samples.jsonl`, the one owner of its contract: every plan orchestrator training (GRPO) sampled, as the
reward saw it. `grpo.rewards` writes it; the viewer reads it here without loading the training stack.

A run resumed from a checkpoint samples again the steps after it that a kill cut short: the file keeps both
attempts (`orchrm.attempts`), and `latest_attempts` is the run as it stands, one attempt per step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from . import attempts, jsonl

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
    attempt: int = Field(0, ge=0, description="Which start of the run wrote it (0, then one more per resume).")


def read_samples(folder: Path) -> list[SampleRecord]:
    """Every record of a training run folder's `samples.jsonl`, in file order."""
    return jsonl.read(folder / SAMPLES_FILE, SampleRecord.model_validate, "sample record")


def next_attempt(path: Path) -> int:
    """The attempt number a run starting now stamps on what it writes to `path`: one past the file's last."""
    return attempts.next_attempt(path, SampleRecord.model_validate, "sample record")


latest_attempts = attempts.latest
