"""Reward-guided orchestrator training: GRPO on the plan-writing model, rewarded by the RM or by execution.

What a run leaves behind is public with its checks: each `checkpoints/checkpoint-N/` sealed in `SEAL_FILE`
(`last_checkpoint`: the newest whose files still match, the one a resume continues from) and the final adapter
(`TrainOutcome.adapter`) carded in `ADAPTER_CARD` (`AdapterCard`), which `served_adapter` checks before serving.
"""

from ..llm.weights import PolicyWeights, convert_gguf, policy_weights
from ..samples import SampleRecord, latest_attempts, read_samples
from .accounting import LedgerLog
from .adapter import ADAPTER_CARD, AdapterCard, served_adapter
from .checkpoints import SEAL_FILE, checkpoints, last_checkpoint
from .config import GRPORunConfig, read_training_config
from .diverse import read_draws
from .rewards import ExecuteScorer, PlanReward, PriorScorer, RMScorer, RouterScorer, Scored, ValidScorer
from .sampler import PlanEngine, Sampling, resolve_sampler
from .setup import AgentOptions, GRPOSetup, setup_run
from .timing import StepTiming, read_steps
from .train import TrainOutcome, open_run, train_orchestrator

__all__ = [
    "ADAPTER_CARD",
    "SEAL_FILE",
    "AdapterCard",
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
    "last_checkpoint",
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
