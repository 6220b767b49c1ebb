"""Sub-agent types, each a small class with one job; `AGENTS` maps a plan's type name to its class."""

from .base import Agent, AgentResult, AgentRun, AgentSettings, Retriever, majority, vote_key
from .cot import CoT
from .debate import Debate
from .reflexion import Reflexion, accepted
from .search import NoCorpus, Search
from .self_consistency import SelfConsistency

AGENTS: dict[str, type[Agent]] = {cls.type: cls for cls in (CoT, SelfConsistency, Reflexion, Debate, Search)}

__all__ = [
    "AGENTS",
    "Agent",
    "AgentResult",
    "AgentRun",
    "AgentSettings",
    "CoT",
    "Debate",
    "NoCorpus",
    "Reflexion",
    "Retriever",
    "Search",
    "SelfConsistency",
    "accepted",
    "majority",
    "vote_key",
]
