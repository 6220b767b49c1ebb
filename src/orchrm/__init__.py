"""orchrm: label-free reward models for LLM multi-agent orchestration plans.

The names below are imported on first use (PEP 562), not when `orchrm` is: every `import orchrm.x` runs
this file first, and eager imports here made each of them (and the CLI's start) load every room.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

_EXPORTS = {
    "OrchrmError": ".errors",
    "AsyncTRLReward": ".adapters",
    "TRLReward": ".adapters",
    "Judgment": ".evidence",
    "SkillEvaluator": ".evidence",
    "load_skills": ".evidence",
    "LLM": ".llm",
    "Completion": ".llm",
    "GenerateConfig": ".llm",
    "Message": ".llm",
    "TokenLedger": ".llm",
    "Usage": ".llm",
    "open_llm": ".llm",
    "Orchestrator": ".mas",
    "Plan": ".mas",
    "PlanError": ".mas",
    "RunConfig": ".mas",
    "Trace": ".mas",
    "arollout": ".mas",
    "execute_plan": ".mas",
    "read_traces": ".mas",
    "Question": ".tasks",
    "Task": ".tasks",
    "load_task": ".tasks",
}

__all__ = sorted([*_EXPORTS, "__version__"])

if TYPE_CHECKING:
    from .adapters import AsyncTRLReward, TRLReward
    from .errors import OrchrmError
    from .evidence import Judgment, SkillEvaluator, load_skills
    from .llm import LLM, Completion, GenerateConfig, Message, TokenLedger, Usage, open_llm
    from .mas import Orchestrator, Plan, PlanError, RunConfig, Trace, arollout, execute_plan, read_traces
    from .tasks import Question, Task, load_task


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'orchrm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
