"""The reward contract: what a plan-writing policy is paid for one completion, written once for every place the
RM is a reward (`train-orchestrator --reward rm`, the TRL / verl / OpenRLHF adapters) and every place it
scores text (`orchrm score`, `orchrm serve`).

- The plan is what `mas.completion.read_plan` finds (reasoning dropped, the last complete plan, MAS-Orchestra
  XML read as a plan), checked by the orchestrator's own rules (`check_plan`) under `degree` and
  `agent_types`.
- A completion with no valid plan is never given a model score: it gets `invalid_penalty` (None: unscored,
  for frameworks that can leave a sample out, such as TRL).
- A valid plan gets the RM's score on `scale`: `unit` (default) squashes it into (0, 1) with a sigmoid, so
  every valid plan is paid above the penalty and the RM's order is kept; `raw` passes the score through
  (then choose a penalty below the RM's range yourself).

With the same settings, every entry point gives the same number for the same (question, completion).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..mas.plans import AGENT_TYPES, Degree, Plan

RewardScale = Literal["unit", "raw"]
#: The penalty `train-orchestrator` gives a plan the parser or validator rejects (`GRPORunConfig.invalid_penalty`).
INVALID_PENALTY = -1.0


def unit(raw: float) -> float:
    """The sigmoid of an RM score, in its tanh form: no overflow for any score."""
    return 0.5 * (1.0 + math.tanh(raw / 2))


class RewardContract(BaseModel):
    """How a completion becomes a reward. The defaults are `train-orchestrator --reward rm`'s."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    degree: Degree = Field("dag", description="Plan shape the policy is asked for: direct, single or dag.")
    agent_types: tuple[str, ...] | None = Field(None, description="Agent types a plan may use (None: every type).")
    invalid_penalty: float | None = Field(
        INVALID_PENALTY, description="Reward of a completion with no valid plan (None: unscored, where allowed)."
    )
    scale: RewardScale = Field("unit", description="unit: sigmoid of the RM score, in (0, 1); raw: the score.")

    def check(self, completion: str) -> Plan:
        """The valid plan in a completion, or `PlanError` naming the rule it broke."""
        from ..mas.orchestrator import check_plan  # the orchestrator's rules; loaded when first judged

        return check_plan(completion, degree=self.degree, agent_types=self.agent_types or AGENT_TYPES)

    def value(self, raw: float) -> float:
        """The reward of a valid plan the RM scored `raw`."""
        return unit(raw) if self.scale == "unit" else float(raw)
