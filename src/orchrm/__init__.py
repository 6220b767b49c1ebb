"""orchrm: label-free reward models for LLM multi-agent orchestration plans."""

from .errors import OrchrmError
from .evidence import Judgment, SkillEvaluator, load_skills
from .llm import (
    LLM,
    Completion,
    GenerateConfig,
    Message,
    TokenLedger,
    Usage,
    open_llm,
)

__version__ = "0.1.0"

__all__ = [
    "LLM",
    "Completion",
    "GenerateConfig",
    "Judgment",
    "Message",
    "OrchrmError",
    "SkillEvaluator",
    "TokenLedger",
    "Usage",
    "__version__",
    "load_skills",
    "open_llm",
]
