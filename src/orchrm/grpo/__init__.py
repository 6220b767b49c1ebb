"""Reward-guided orchestrator training: GRPO on the plan-writing model, rewarded by the RM or by execution."""

from ..llm.weights import PolicyWeights, convert_gguf, policy_weights
from ..samples import SampleRecord, latest_attempts, read_samples
from .accounting import LedgerLog
from .adapter import served_adapter
from .checkpoints import SEAL_FILE, checkpoints
from .config import GRPORunConfig, read_training_config
from .diverse import read_draws
from .rewards import ExecuteScorer, PlanReward, PriorScorer, RMScorer, RouterScorer, Scored, ValidScorer
from .sampler import PlanEngine, Sampling, resolve_sampler
from .setup import AgentOptions, GRPOSetup, setup_run
from .timing import StepTiming, read_steps
from .train import TrainOutcome, open_run, train_orchestrator

__all__ = [
    "SEAL_FILE",
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
    "checkpoints",
    "convert_gguf",
    "latest_attempts",
    "open_run",
    "policy_weights",
    "read_draws",
    "read_samples",
    "read_steps",
    "read_training_config",
    "resolve_sampler",
    "served_adapter",
    "setup_run",
    "train_orchestrator",
]
