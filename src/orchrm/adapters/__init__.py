"""The orchestration RM plugged into RL frameworks unchanged: a TRL reward function (`trl`), a verl custom
reward file (`verl`), and OpenRLHF's remote protocol and reward file (`openrlhf`). Each scores the plan in a
completion exactly as `RewardModel.score` does, in process or through `orchrm serve`, and names every
completion it could not score instead of giving it a silent number."""

from ._core import END_TOKENS, FAILURES, RewardServerError, Verdict, plan_text
from ._remote import RemoteScorer
from .trl import AsyncTRLReward, TRLReward

__all__ = [
    "END_TOKENS",
    "FAILURES",
    "AsyncTRLReward",
    "RemoteScorer",
    "RewardServerError",
    "TRLReward",
    "Verdict",
    "plan_text",
]
