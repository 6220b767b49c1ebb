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
from .mas import Orchestrator, Plan, PlanError, RunConfig, Trace, arollout, execute_plan, read_traces
from .tasks import Question, Task, load_task

__version__ = "0.1.0"

__all__ = [
    "LLM",
    "Completion",
    "GenerateConfig",
    "Judgment",
    "Message",
    "Orchestrator",
    "OrchrmError",
    "Plan",
    "PlanError",
    "Question",
    "RunConfig",
    "SkillEvaluator",
    "Task",
    "TokenLedger",
    "Trace",
    "Usage",
    "__version__",
    "arollout",
    "execute_plan",
    "load_skills",
    "load_task",
    "open_llm",
    "read_traces",
]
