"""MAS-Orchestra's plan format, read into orchrm `Plan`s and written from them.

MAS-Orchestra (Salesforce AI Research) has its orchestrator write `<agent>` blocks, each with
`<agent_id>`, `<agent_name>` (`CoTAgent`, `SCAgent`, `DebateAgent`, `ReflexionAgent`, `WebSearchAgent`),
`<agent_description>` and `<required_arguments>` (`<agent_input>`, which may reference upstream outputs as
`${agent_id}`, and `<debate_roles>` for a debate), then one `<edge>` block of `<from>`/`<to>` pairs; or, with
no agent, an `<answer>`. An empty `<agent_input>` (or `""`) means "the original question".

The graph is read as MAS-Orchestra's own parser reads it (SalesforceAIResearch/MAS-Orchestra,
`mas_r1_reasoner/rewards/utils/harmony_parser/medium.py`: `extract_edges`, `parse_harmony_agent_response`,
`validate_graph`, `topological_sort`, `generate_multi_agent_code`): edges come from the `<edge>` block only
(`<from>`s paired in order with `<to>`s; a repeated edge is one), several agents with no edge are refused, and
the edges must name declared agents, leave at least one agent without an incoming edge, leave exactly one
without an outgoing edge, connect every agent from a start to that sink, and form no cycle, checked in that
order. A `${id}` in an input is not an edge there: MAS-Orchestra's executor substitutes it only when `id` ran
earlier in its execution order (Kahn's, queue seeded in agent order, children in edge order). orchrm's plans
need edges and references to match one to one, so the conversion adds `${src}` (on a line of its own) to the
input of an edge's target that lacks it, and adds the edge a substituted reference implies (it runs forward
in that order, so it keeps the graph a DAG with the same sink); a `${id}` MAS-Orchestra would leave as text
(an unknown id, the agent's own, or one that runs later) is a `PlanError`, since orchrm would read it as an
edge. orchrm is stricter than MAS-Orchestra on malformed text (a block without `<agent_id>`, an unknown
`<agent_name>`, `<from>`s and `<to>`s of different counts, a second `<edge>` block), which MAS-Orchestra skips,
fails at run time, truncates or ignores.

Reading never executes or evaluates anything and expands no entity (see `_tags`); every failure is a
`PlanError` naming a rule. orchrm's own limits (agent count, input length, allowed types) are then checked by
`validate_plan`, as for orchrm's own plans.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from ... import safejson
from ..options import RolesOption
from ..plans import AgentSpec, Plan, PlanError, option_bounds
from ._mas_graph import _data_flow
from ._tags import Block, blocks, closes_inside

#: MAS-Orchestra agent names -> orchrm agent types (matched case-insensitively, as MAS-Orchestra does).
#: `PythonAgent` is a block in MAS-Orchestra's library that its medium-level parser does not dispatch.
AGENT_NAMES: dict[str, str] = {
    "CoTAgent": "cot",
    "SCAgent": "self_consistency",
    "DebateAgent": "debate",
    "ReflexionAgent": "reflexion",
    "WebSearchAgent": "search",
    "PythonAgent": "python",
}
_TYPES = {t: name for name, t in AGENT_NAMES.items()}
_BY_LOWER = {name.lower(): t for name, t in AGENT_NAMES.items()}

#: The input an empty `<agent_input>` becomes (orchrm needs a non-empty input), and is written back as.
ORIGINAL_QUESTION_INPUT = "Solve the original question."
#: orchrm option -> required argument, where MAS-Orchestra has a name for it; other options keep their name.
_ARGUMENT_NAMES = {("debate", "roles"): "debate_roles"}

#: Bounds on what is read: a longer text, or more blocks, is a `PlanError` before any record is built.
MAX_TEXT_CHARS = 1_000_000
MAX_AGENT_BLOCKS = 64
MAX_ARGUMENTS = 16
MAX_EDGES = 1024

_TOP = ("agent", "edge", "thinking", "answer")
_AGENT_FIELDS = ("agent_id", "agent_name", "agent_description", "required_arguments")
_TAGS = (*_TOP, *_AGENT_FIELDS, "agent_input", "debate_roles", "from", "to")
_INT = re.compile(r"[+-]?[0-9]{1,9}")
_QUOTED = re.compile(r"'([^'\\]*)'|\"([^\"\\]*)\"")


@dataclass
class MasOrchestraPlan:
    """A MAS-Orchestra plan as orchrm reads it: the `Plan`, plus the free texts orchrm plans have no field
    for (each agent's description, the `<thinking>` section), kept so a plan can be written back whole, and
    the `${src}` references the conversion added to inputs, by agent id (edges whose target had none)."""

    plan: Plan
    descriptions: dict[str, str] = field(default_factory=dict)
    thinking: str | None = None
    added_references: dict[str, list[str]] = field(default_factory=dict)


#: A MAS-Orchestra-format text as far as routing needs: an `<agent>` block with an `<agent_id>` after it.
_AGENT_OPEN = re.compile(r"<agent>", re.IGNORECASE | re.ASCII)
_AGENT_ID_OPEN = re.compile(r"<agent_id>", re.IGNORECASE | re.ASCII)


def looks_like_mas_orchestra(text: str) -> bool:
    """Whether `text` is worth reading as MAS-Orchestra's format: an `<agent>` tag with an `<agent_id>` after
    it (two linear searches; nothing is parsed). A bare `<answer>` is not claimed: other formats use it too."""
    if not isinstance(text, str):
        return False
    m = _AGENT_OPEN.search(text)
    return m is not None and _AGENT_ID_OPEN.search(text, m.end()) is not None


def parse_mas_orchestra(text: str) -> Plan:
    """The plan in a MAS-Orchestra orchestrator reply (prose around the blocks is skipped), with the graph
    read and checked as MAS-Orchestra reads it and its edges and `${id}` references made to match. Raises
    `PlanError`, and nothing else, on any input; orchrm's own limits are `validate_plan`'s to check."""
    return read_mas_orchestra(text).plan


def read_mas_orchestra(text: str) -> MasOrchestraPlan:
    """`parse_mas_orchestra`, keeping what the `Plan` has no field for (descriptions, thinking, the
    references the conversion added), so that `to_mas_orchestra` can write the plan back whole."""
    if not isinstance(text, str):
        raise PlanError("parse", f"the orchestrator's output is a {type(text).__name__}, not text")
    if not text.strip():
        raise PlanError("parse", "the orchestrator's output is empty")
    if len(text) > MAX_TEXT_CHARS:
        raise PlanError("too_large", f"{len(text)} characters, at most {MAX_TEXT_CHARS} are read")
    top = blocks(text, _TOP, where="the plan", limit=MAX_AGENT_BLOCKS + 3)
    by_name: dict[str, list[Block]] = {n: [] for n in _TOP}
    for b in top:
        by_name[b.name.lower()].append(b)
    for name in ("edge", "thinking", "answer"):
        if len(by_name[name]) > 1:
            raise PlanError("parse", f"{len(by_name[name])} <{name}> blocks; a plan has at most one")
    thinking = by_name["thinking"][0].content.strip() if by_name["thinking"] else None
    if not by_name["agent"]:
        if by_name["answer"]:
            return MasOrchestraPlan(Plan(answer=by_name["answer"][0].content.strip()), thinking=thinking)
        raise PlanError("parse", "no <agent> block or <answer> found in the output")
    if len(by_name["agent"]) > MAX_AGENT_BLOCKS:
        raise PlanError("too_many_agents", f"{len(by_name['agent'])} agents, at most {MAX_AGENT_BLOCKS} are read")
    agents: list[AgentSpec] = []
    descriptions: dict[str, str] = {}
    dropped: dict[str, list[str]] = {}
    for i, b in enumerate(by_name["agent"]):
        spec, description, unknown = _agent(b.content, i)
        agents.append(spec)
        if description:
            descriptions.setdefault(spec.id, description)
        if unknown:
            dropped.setdefault(spec.id, []).extend(unknown)
    edges = _edges(by_name["edge"][0].content) if by_name["edge"] else []
    agents, added = _data_flow(agents, edges)
    plan = Plan(agents=agents, dropped_options=dropped)
    plan = plan.model_copy(update={"edges": plan.implied_edges()})
    return MasOrchestraPlan(plan, descriptions, thinking, added)


def _agent(content: str, index: int) -> tuple[AgentSpec, str, list[str]]:
    where = f"agent block {index + 1}"
    fields: dict[str, str] = {}
    for b in blocks(content, _AGENT_FIELDS, where=where, limit=len(_AGENT_FIELDS) + 1):
        key = b.name.lower()
        if key in fields:
            raise PlanError("parse", f"{where} has two <{key}>")
        fields[key] = b.content
    agent_id = fields.get("agent_id", "").strip()
    if not agent_id:
        raise PlanError("parse", f"{where} has no <agent_id>")
    if len(agent_id) > 40:  # checked before the id is quoted in any message
        raise PlanError("schema", f"{where}: agent_id {agent_id[:40]!r}... is over 40 characters", agent=agent_id[:40])
    name = fields.get("agent_name", "").strip()
    agent_type = _BY_LOWER.get(name.lower())
    if agent_type is None:
        known = ", ".join(AGENT_NAMES)
        raise PlanError(
            "unknown_type", f"agent {agent_id!r} has agent_name {name[:60]!r}; known: {known}", agent=agent_id
        )
    agent_input = ""
    options: dict[str, object] = {}
    unknown: list[str] = []
    bounds = option_bounds(agent_type) or {}
    arguments = blocks(
        fields.get("required_arguments", ""), None, where=f"{where}'s required_arguments", limit=MAX_ARGUMENTS
    )
    # The argument each option is written as: MAS-Orchestra's own name where it has one, else the option's.
    option_of = {_ARGUMENT_NAMES.get((agent_type, o), o): o for o in bounds}
    seen: set[str] = set()
    for arg in arguments:
        key = arg.name.lower()
        if key in seen:
            raise PlanError("parse", f"agent {agent_id!r} sets <{key}> twice", agent=agent_id)
        seen.add(key)
        if key == "agent_input":
            agent_input = arg.content.strip()
        elif key in option_of and isinstance(bounds[option_of[key]], RolesOption):
            options[option_of[key]] = _roles(arg.content, agent_id)
        elif key in option_of:
            options[option_of[key]] = _integer(arg.content, agent_id, option_of[key])
        else:
            unknown.append(key)
    if agent_input in ("", '""', "''"):
        agent_input = ORIGINAL_QUESTION_INPUT
    try:
        spec = AgentSpec(id=agent_id, type=agent_type, input=agent_input, options=options)
    except ValidationError as exc:  # the bounds are checked above; kept so a new AgentSpec rule is a PlanError
        err = exc.errors()[0]
        raise PlanError(
            "schema", f"agent {agent_id!r} {'.'.join(map(str, err['loc']))}: {err['msg']}", agent=agent_id
        ) from None
    return spec, fields.get("agent_description", "").strip(), unknown


def _integer(raw: str, agent_id: str, option: str) -> int:
    value = raw.strip()
    if not _INT.fullmatch(value):
        raise PlanError(
            "options", f"agent {agent_id!r} option {option}={value[:40]!r} must be an integer", agent=agent_id
        )
    return int(value)


def _roles(raw: str, agent_id: str) -> list[str]:
    """`["A", "B"]` as JSON, or a flat list of single- or double-quoted strings (`['A', 'B']`, as Python
    writes one): read without evaluating anything."""
    value = raw.strip()
    try:
        parsed = safejson.loads(value, safejson.Limits(max_chars=20_000, max_depth=2, max_number_chars=20))
    except safejson.UnsafeJSONError:
        parsed = None
        if value.startswith("[") and value.endswith("]"):
            inner = value[1:-1]
            items = [m.group(1) if m.group(1) is not None else m.group(2) for m in _QUOTED.finditer(inner)]
            if not _QUOTED.sub("", inner).replace(",", "").strip():
                parsed = items
    if not isinstance(parsed, list) or not all(isinstance(r, str) for r in parsed):
        raise PlanError(
            "options", f"agent {agent_id!r} debate_roles {value[:60]!r} is not a list of strings", agent=agent_id
        )
    return parsed


def _edges(content: str) -> list[tuple[str, str]]:
    """The `<edge>` block's pairs, as MAS-Orchestra reads them: the n-th `<from>` with the n-th `<to>`,
    stripped (repeats kept: its execution order counts them). Unequal counts, which MAS-Orchestra truncates
    silently, are a `PlanError` here."""
    ends: dict[str, list[str]] = {"from": [], "to": []}
    for b in blocks(content, ("from", "to"), where="the <edge> block", limit=2 * MAX_EDGES):
        end = b.content.strip()
        if len(end) > 40:  # no agent id is longer; checked before the text is quoted in any message
            raise PlanError(
                "unknown_edge_end",
                f"<{b.name}>{end[:40]}...</{b.name}> names no agent (ids have at most 40 characters)",
            )
        ends[b.name.lower()].append(end)
    froms, tos = ends["from"], ends["to"]
    if len(froms) != len(tos):
        raise PlanError(
            "edge_pairs", f"the <edge> block has {len(froms)} <from> and {len(tos)} <to>; each edge needs one of each"
        )
    return list(zip(froms, tos, strict=True))


def to_mas_orchestra(
    plan: Plan | MasOrchestraPlan, *, descriptions: dict[str, str] | None = None, thinking: str | None = None
) -> str:
    """The plan in MAS-Orchestra's format. Edges are the ones the references imply plus any explicit edge
    the plan has beyond them (MAS-Orchestra wants them written). orchrm options other than debate roles
    have no MAS-Orchestra argument: they are written as extra `<required_arguments>` children, which
    MAS-Orchestra's parser ignores and `parse_mas_orchestra` reads back. An agent without a description gets
    one naming its type. A text that would end its own block early (`</agent_input>` inside an input) is a
    `PlanError` (`unrepresentable`); an agent type MAS-Orchestra has no name for is one too."""
    if isinstance(plan, MasOrchestraPlan):
        descriptions = plan.descriptions if descriptions is None else descriptions
        thinking = plan.thinking if thinking is None else thinking
        plan = plan.plan
    descriptions = descriptions or {}
    parts: list[str] = []
    if thinking:
        parts.append(f"<thinking>\n{_text(thinking, 'thinking')}\n</thinking>")
    if not plan.agents:
        if plan.answer is None:
            raise PlanError("no_agents", "the plan has no agents and no answer")
        parts.append(f"<answer>{_text(plan.answer, 'answer')}</answer>")
        return "\n".join(parts) + "\n"
    for a in plan.agents:
        name = _TYPES.get(a.type)
        if name is None:
            raise PlanError(
                "unrepresentable",
                f"agent {a.id!r} has type {a.type!r}, which MAS-Orchestra has no agent for",
                agent=a.id,
            )
        description = descriptions.get(a.id) or f"{name}: an orchrm {a.type} agent."
        agent_input = "" if a.input.strip() == ORIGINAL_QUESTION_INPUT else a.input
        args = [f"    <agent_input>{_text(agent_input, 'agent_input', a.id)}</agent_input>"]
        for key, value in sorted(a.options.items()):
            tag = _ARGUMENT_NAMES.get((a.type, key), key)
            if isinstance(value, list):
                rendered = "[" + ", ".join(_json_string(str(v)) for v in value) + "]"
            else:
                rendered = str(value)
            args.append(f"    <{tag}>{_text(rendered, tag, a.id)}</{tag}>")
        parts.append(
            "<agent>\n"
            f"  <agent_id>{_text(a.id, 'agent_id', a.id)}</agent_id>\n"
            f"  <agent_name>{name}</agent_name>\n"
            f"  <agent_description>{_text(description, 'agent_description', a.id)}</agent_description>\n"
            "  <required_arguments>\n" + "\n".join(args) + "\n  </required_arguments>\n"
            "</agent>"
        )
    edges = list(dict.fromkeys((e.src, e.dst) for e in [*plan.implied_edges(), *plan.edges]))
    if edges:
        lines = [f"  <from>{_text(s, 'from')}</from><to>{_text(d, 'to')}</to>" for s, d in edges]
        parts.append("<edge>\n" + "\n".join(lines) + "\n</edge>")
    return "\n".join(parts) + "\n"


def _text(value: str, tag: str, agent: str | None = None) -> str:
    """`value` as a block's content: without surrounding whitespace (the format drops it), and refused when
    it holds a closing tag of the format, which would end a block early."""
    bad = closes_inside(value, _TAGS)
    if bad is not None:
        what = f"agent {agent!r} {tag}" if agent else tag
        raise PlanError("unrepresentable", f"{what} contains {bad!r}, which would end a block early", agent=agent)
    return value.strip()


def _json_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)
