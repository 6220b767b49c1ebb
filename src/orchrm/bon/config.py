"""`BonConfig`: the selection settings of a best-of-N run. The held-out rollout's own settings live in its
`RunConfig`, N among them (`n_plans`, the plans sampled per question): selection reads N from the plans it is
given, and is never told it twice."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ..mas.options import TOOL_TYPES


class BonConfig(BaseModel):
    """Selection settings (the held-out rollout's own settings, N among them, live in its `RunConfig`). A
    `results.json` or `loop.json` written while this held its own `n` still loads: the key is ignored."""

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

    def judged_ns(self, n: int) -> list[int]:
        """The N values the judge runs at, for questions with `n` plans."""
        return sorted({k for k in (self.judge_ns or [n]) if 2 <= k <= n})


def judge_by_default(agent_types: Sequence[str] | None) -> bool:
    """Whether best-of-N runs the listwise judge when not told: not on a task whose sub-agents are all exact tools.
    There every outcome is exact and scored against the reference, and the judge, an LLM reading every executed
    plan, is the one stage beyond plan writing that calls a model: on 2 cores it took 1,182 s of the positive
    control's 1,279 s demo (bench/results/demo_time_tools_exact.json). `--judge` still runs it."""
    return not agent_types or not set(agent_types) <= set(TOOL_TYPES)


def resolve_judge(given: bool | None, agent_types: Sequence[str] | None) -> bool:
    """`--judge/--no-judge` as given, or the task's default when left out (`judge_by_default`)."""
    return judge_by_default(agent_types) if given is None else given
