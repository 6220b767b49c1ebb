"""`BonConfig`: the selection settings of a best-of-N run (the held-out rollout's own settings live in its
`RunConfig`)."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, Field


class BonConfig(BaseModel):
    """Selection settings (the held-out rollout's own settings live in its `RunConfig`)."""

    n: int = Field(8, ge=1, description="Plans sampled per held-out question.")
    judge: bool = Field(True, description="Run the Skill-RM listwise judge baseline.")
    judge_max_steps: int = Field(3, ge=1, description="Judge agent steps per trajectory.")
    judge_max_tokens: int = Field(256, ge=16, description="Judge completion tokens per step.")
    judge_ns: list[int] = Field(default_factory=list, description="N values the judge runs at (default: N only).")
    judge_concurrency: int = Field(2, ge=1, description="Questions judged at once.")
    tau: float = Field(0.5, ge=0, description="rm-adaptive's margin, in standard deviations of the rewards.")
    taus: list[float] = Field(default_factory=lambda: [0.0, 0.25, 0.5, 1.0, 2.0], description="rm-adaptive sweep.")
    resamples: int = Field(2000, ge=100)
    seed: int = 0
    prior_strength: float = Field(
        2.0, gt=0, description="prior: Beta smoothing weight, in pseudo-trials at the global rate"
    )

    def judge_key(self) -> str:
        """Judgments made with other settings are not reused."""
        blob = json.dumps([self.judge_max_steps, self.judge_max_tokens], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:10]

    def judged_ns(self) -> list[int]:
        return sorted({n for n in (self.judge_ns or [self.n]) if 2 <= n <= self.n})
