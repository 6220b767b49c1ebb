"""orchrm: label-free reward models for LLM multi-agent orchestration plans."""

from .errors import OrchrmError
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
    "Message",
    "OrchrmError",
    "TokenLedger",
    "Usage",
    "__version__",
    "open_llm",
]
