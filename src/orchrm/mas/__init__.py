"""The multi-agent system orchrm scores: plans, sub-agents, the executor, traces, rollouts."""

from .agents import AGENTS, Agent, AgentResult, AgentRun, AgentSettings
from .executor import Execution, ExecutorConfig, execute_plan
from .orchestrator import Orchestrator, OrchestratorConfig, PlanSample
from .plans import AGENT_TYPES, DEGREES, AgentSpec, Edge, Plan, PlanError, parse_plan, plan_json_schema, validate_plan
from .rollout import Progress, RunConfig, arollout, replay
from .traces import TRACE_VERSION, AgentEvent, LLMCall, RunFileError, Trace, TraceWriter, locate_traces, read_traces

__all__ = [
    "AGENTS",
    "AGENT_TYPES",
    "DEGREES",
    "TRACE_VERSION",
    "Agent",
    "AgentEvent",
    "AgentResult",
    "AgentRun",
    "AgentSettings",
    "AgentSpec",
    "Edge",
    "Execution",
    "ExecutorConfig",
    "LLMCall",
    "Orchestrator",
    "OrchestratorConfig",
    "Plan",
    "PlanError",
    "PlanSample",
    "Progress",
    "RunConfig",
    "RunFileError",
    "Trace",
    "TraceWriter",
    "arollout",
    "execute_plan",
    "locate_traces",
    "parse_plan",
    "plan_json_schema",
    "read_traces",
    "replay",
    "validate_plan",
]
