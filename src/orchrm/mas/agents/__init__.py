"""Sub-agent types, each a small class with one job; `AGENTS` maps a plan's type name to its class."""

from .base import Agent, AgentResult, AgentRun, AgentSettings, Retriever, majority
from .cot import CoT
from .debate import Debate
from .python import ProgramFailed, Python
from .reflexion import Reflexion, accepted
from .search import NoCorpus, Search
from .self_consistency import SelfConsistency
from .tools import BadLookup, Calc, Lookup, NoRecords

AGENTS: dict[str, type[Agent]] = {
    cls.type: cls for cls in (CoT, SelfConsistency, Reflexion, Debate, Search, Python, Lookup, Calc)
}
#: Every type a plan may name, in this order (the constrained-decoding schema lists its branches in it).
AGENT_TYPES: tuple[str, ...] = tuple(AGENTS)

__all__ = [
    "AGENTS",
    "AGENT_TYPES",
    "Agent",
    "AgentResult",
    "AgentRun",
    "AgentSettings",
    "BadLookup",
    "Calc",
    "CoT",
    "Debate",
    "Lookup",
    "NoRecords",
    "NoCorpus",
    "ProgramFailed",
    "Python",
    "Reflexion",
    "Retriever",
    "Search",
    "SelfConsistency",
    "accepted",
    "majority",
]
