"""One LLM interface for all of orchrm: backends, response cache, token accounting, embedded models."""

from .accounting import (
    CATEGORIES,
    TOKENS_FILE,
    TOKENS_LOG,
    CategoryTotals,
    LedgerTotals,
    TokenCount,
    TokenLedger,
    UsageRecord,
    read_totals,
    run_ledger,
)
from .backend import Backend, described
from .cache import ResponseCache
from .client import LLM, violation
from .factory import (
    BACKENDS,
    close_llms,
    create_backend,
    ensure_reachable,
    open_agent_llm,
    open_llm,
    open_llms,
    split_base_urls,
)
from .fleet import Failover, FleetBackend
from .local import LocalBackend
from .models import DEFAULT_MODEL, REGISTRY, AdapterFile, ModelFile, prepare_model, resolve_model, verify_model
from .openai_backend import OpenAIBackend
from .server import LlamaServer, ServerConfig
from .types import Completion, GenerateConfig, Message, ToolCall, Usage
from .weights import quiet_transformers

__all__ = [
    "BACKENDS",
    "CATEGORIES",
    "TOKENS_FILE",
    "TOKENS_LOG",
    "AdapterFile",
    "DEFAULT_MODEL",
    "LLM",
    "REGISTRY",
    "Backend",
    "CategoryTotals",
    "Completion",
    "Failover",
    "FleetBackend",
    "GenerateConfig",
    "LlamaServer",
    "LedgerTotals",
    "LocalBackend",
    "Message",
    "ModelFile",
    "OpenAIBackend",
    "ResponseCache",
    "ServerConfig",
    "TokenCount",
    "TokenLedger",
    "ToolCall",
    "Usage",
    "UsageRecord",
    "close_llms",
    "create_backend",
    "described",
    "ensure_reachable",
    "open_agent_llm",
    "open_llm",
    "open_llms",
    "prepare_model",
    "quiet_transformers",
    "read_totals",
    "resolve_model",
    "run_ledger",
    "split_base_urls",
    "verify_model",
    "violation",
]
