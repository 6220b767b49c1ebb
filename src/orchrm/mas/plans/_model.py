"""What a plan is: its pydantic records, the agent types and option bounds it may use (from `mas.options`), and
its graph (order, sink, shape)."""

from __future__ import annotations

import re
import unicodedata
from collections import deque
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from ...errors import OrchrmError
from ..options import CATALOG, OptionBound
from ..run_config import Degree

DEGREES: tuple[str, ...] = get_args(Degree)  # the plan shapes a rollout may ask for, declared with the setting

MAX_AGENTS = 8
MAX_INPUT_CHARS = 2000
# A leading digit is allowed: MAS-Orchestra's prompt asks for ids of letters, digits and `_` in any order.
ID = r"[A-Za-z0-9_][A-Za-z0-9_\-]*"
REFERENCE = re.compile(r"\$\{(" + ID + r")\}")
# Anything written like a reference; those REFERENCE does not match (`${ a }`, `${1}`, a Cyrillic letter
# that looks Latin) would otherwise pass silently as plain text and run the agent without its input.
_REFERENCE_LIKE = re.compile(r"\$\{([^{}]{0,60})\}")


class PlanError(OrchrmError):
    """A plan that cannot be executed. `rule` names the rule broken; `agent` the agent involved, if any."""

    def __init__(self, rule: str, message: str, *, agent: str | None = None) -> None:
        super().__init__(f"invalid plan ({rule}): {message}")
        self.rule = rule
        self.agent = agent
        self.reason = message


#: Every agent type a plan may name, in the catalog's order (the schema lists them in it).
AGENT_TYPES: tuple[str, ...] = tuple(CATALOG)


def agent_types() -> tuple[str, ...]:
    """Every agent type a plan may name (`AGENT_TYPES`)."""
    return AGENT_TYPES


def option_bounds(agent_type: str) -> dict[str, OptionBound] | None:
    """The options `agent_type` takes, as the catalog declares them; None for a type not in it."""
    return CATALOG.get(agent_type)


class AgentSpec(BaseModel):
    """One sub-agent of a plan."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=40)
    type: str
    input: str
    options: dict[str, Any] = Field(default_factory=dict)

    def references(self) -> list[str]:
        """Upstream agent ids referenced as `${id}` in the input, in order, without repeats."""
        return list(dict.fromkeys(REFERENCE.findall(self.input)))

    def malformed_references(self) -> list[str]:
        """Texts written as `${...}` that are not a valid agent id, and texts that only read as `${...}` once
        look-alike characters are folded (fullwidth `＄｛a1｝`): both would run the agent without its input."""
        bad = [m for m in _REFERENCE_LIKE.findall(self.input) if not re.fullmatch(ID, m)]
        if not self.input.isascii():
            written = set(_REFERENCE_LIKE.findall(self.input))
            bad += [m for m in _REFERENCE_LIKE.findall(unicodedata.normalize("NFKC", self.input)) if m not in written]
        return bad


class Edge(BaseModel):
    """Data flows from `from` to `to`: the output of `from` is substituted into the input of `to`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    src: str = Field(alias="from")
    dst: str = Field(alias="to")


class Plan(BaseModel):
    """A multi-agent system for one question (or, with no agents, the orchestrator's own answer)."""

    model_config = ConfigDict(extra="forbid")

    agents: list[AgentSpec] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)
    answer: str | None = None
    # Options an agent's type does not take (a `samples` on a `cot`, copied from an example), by agent id:
    # parsing drops them instead of voiding the plan and notes here what it dropped. Constrained decoding
    # never writes one; the raw text keeps them.
    dropped_options: dict[str, list[str]] = Field(default_factory=dict)
    # Edges that order two agents but carry no data: MAS-Orchestra runs an `<edge>`'s target after its source
    # whether or not the target's input quotes `${source}`, and passes nothing when it does not. Only the
    # MAS-Orchestra reader sets them (an orchestrator's JSON may not); validation keeps them in `edges`.
    order_edges: list[Edge] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _omit_empty_note(self, handler: Any) -> dict[str, Any]:
        # Plans with nothing dropped serialise as they did before the note existed (traces, plan JSON).
        data = handler(self)
        for key in ("dropped_options", "order_edges"):
            if not getattr(self, key):
                data.pop(key, None)
        return data

    def agent(self, agent_id: str) -> AgentSpec:
        for a in self.agents:
            if a.id == agent_id:
                return a
        raise KeyError(agent_id)

    def upstream(self, agent_id: str) -> list[str]:
        return [e.src for e in self.edges if e.dst == agent_id]

    def sinks(self) -> list[str]:
        """Agents with no outgoing edge, in the plan's order (a valid plan has exactly one)."""
        has_out = {e.src for e in self.edges}
        return [a.id for a in self.agents if a.id not in has_out]

    def sink(self) -> str:
        """The one agent with no outgoing edge (call on a validated plan)."""
        return self.sinks()[0]

    def to_json(self) -> str:
        """The plan as an orchestrator would write it (without the parser's note, which traces keep)."""
        return self.model_dump_json(by_alias=True, exclude_none=True, exclude={"dropped_options", "order_edges"})

    def implied_edges(self) -> list[Edge]:
        """The edges the `${id}` references imply, in agent then reference order."""
        return [Edge(src=ref, dst=a.id) for a in self.agents for ref in a.references()]


def topological_order(plan: Plan, *, cycles: Literal["raise", "append"] = "raise") -> list[str]:
    """Agent ids in an order where every agent follows its upstream ones (Kahn; ties keep the plan's order).

    Linear, and total on any plan: edges naming an unknown agent are ignored, and a repeated id is one node
    (listed once per writing when it is a source: the RM's rendering has always done so). Agents on a cycle
    are a `PlanError` (`cycles="raise"`) or follow in the plan's own order (`"append"`, for rendering plans
    that never validated)."""
    ids = [a.id for a in plan.agents]
    position: dict[str, int] = {}
    for i, agent_id in enumerate(ids):
        position.setdefault(agent_id, i)
    indegree = {i: 0 for i in ids}
    children: dict[str, list[str]] = {i: [] for i in ids}
    for e in plan.edges:
        if e.src in indegree and e.dst in indegree:
            indegree[e.dst] += 1
            children[e.src].append(e.dst)
    ready = deque(i for i in ids if indegree[i] == 0)
    order: list[str] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for child in sorted(children[node], key=position.__getitem__):
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    placed = set(order)
    stuck = [i for i in ids if i not in placed]
    if stuck and cycles == "raise":
        raise PlanError("cycle", f"the agents {', '.join(dict.fromkeys(stuck))} form a cycle", agent=stuck[0])
    return order + stuck


def plan_shape(plan: Plan | None) -> str:
    """A plan's structure without its texts: agent types by topological level, `search + search | python` for
    two searches feeding a python agent; `direct` for the orchestrator's own answer, `invalid` for no plan."""
    if plan is None:
        return "invalid"
    if not plan.agents:
        return "direct"
    ups = {a.id: set(a.references()) | {e.src for e in plan.edges if e.dst == a.id} for a in plan.agents}
    level: dict[str, int] = {}
    for agent_id in topological_order(plan.model_copy(update={"edges": plan.implied_edges()})):
        level[agent_id] = 1 + max((level[u] for u in ups[agent_id] if u in level), default=-1)
    by_level: dict[int, list[str]] = {}
    for a in plan.agents:
        by_level.setdefault(level[a.id], []).append(a.type)
    return " | ".join(" + ".join(sorted(by_level[i])) for i in sorted(by_level))
