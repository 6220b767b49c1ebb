"""Reward-guided orchestrator training: GRPO on the plan-writing model, rewarded by the RM or by execution."""

from ..llm.weights import PolicyWeights, convert_gguf, policy_weights
from ..samples import SampleRecord
from .accounting import LedgerLog
from .config import GRPORunConfig
from .rewards import ExecuteScorer, PlanReward, PriorScorer, RMScorer, RouterScorer, Scored, ValidScorer
from .sampler import PlanEngine, Sampling, resolve_sampler
from .setup import AgentOptions, GRPOSetup, setup_run
from .timing import StepTiming
from .train import TrainOutcome, open_run, train_orchestrator

__all__ = [
    "AgentOptions",
    "ExecuteScorer",
    "GRPORunConfig",
    "GRPOSetup",
    "LedgerLog",
    "PlanEngine",
    "PlanReward",
    "PolicyWeights",
    "PriorScorer",
    "RMScorer",
    "RouterScorer",
    "SampleRecord",
    "Sampling",
    "Scored",
    "StepTiming",
    "TrainOutcome",
    "ValidScorer",
    "convert_gguf",
    "open_run",
    "policy_weights",
    "resolve_sampler",
    "setup_run",
    "train_orchestrator",
]
