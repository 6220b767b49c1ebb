"""Plans: the orchestrator's whole multi-agent system for one question, as JSON; the one home of what a plan
means (its records, graph order and sink, option bounds, validity rules, parsing and constrained schema).

A plan is a set of agents (unique id, type, input text that may reference upstream outputs as `${id}`,
type-specific options) plus optional edges `{"from": a, "to": b}`. A reference is the edge: `${a}` in b's
input implies a -> b, so a plan never has to spell its graph twice (small orchestrators got the two out of
step in most multi-agent plans). Explicit edges stay allowed and must agree with the references. The graph
must be a DAG with exactly one sink, and no agent may be isolated.
A plan may instead carry only `answer` (the orchestrator answering itself, degree `direct`).

Which types exist and which options each takes is declared in `mas.options` (`CATALOG`), below both this
package and the agent classes that build on it.

`parse_plan` turns raw model text into a `Plan`; `validate_plan` checks the rules. Both raise `PlanError`
naming the rule broken and the agent involved; in a rollout that error is recorded, never raised further.
"""

from ._model import (
    AGENT_TYPES,
    DEGREES,
    MAX_AGENTS,
    MAX_INPUT_CHARS,
    REFERENCE,
    AgentSpec,
    Degree,
    Edge,
    Plan,
    PlanError,
    agent_types,
    option_bounds,
    plan_shape,
    topological_order,
)
from ._parse import MAX_PLAN_TEXT_CHARS, PLAN_JSON_LIMITS, drop_unknown_options, parse_plan
from ._region import ASSISTANT_HEADER, END_TOKENS, Region, split_region
from ._schema import SCHEMA_MAX_AGENTS, plan_json_schema, schema_agent_id
from ._validate import parse_and_validate, validate_plan

__all__ = [
    "AGENT_TYPES",
    "ASSISTANT_HEADER",
    "END_TOKENS",
    "DEGREES",
    "MAX_AGENTS",
    "MAX_INPUT_CHARS",
    "MAX_PLAN_TEXT_CHARS",
    "PLAN_JSON_LIMITS",
    "REFERENCE",
    "SCHEMA_MAX_AGENTS",
    "AgentSpec",
    "Degree",
    "Edge",
    "Plan",
    "PlanError",
    "Region",
    "agent_types",
    "drop_unknown_options",
    "option_bounds",
    "parse_and_validate",
    "parse_plan",
    "plan_json_schema",
    "plan_shape",
    "schema_agent_id",
    "split_region",
    "topological_order",
    "validate_plan",
]
