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

import ast
import re
import warnings
from dataclasses import dataclass, field

from pydantic import ValidationError

from ... import safejson
from ..options import RolesOption
from ..plans import AgentSpec, Edge, Plan, PlanError, option_bounds
from ._mas_graph import _data_flow
from ._mas_read import Span, child_tags, pairs, plan_segments, spans
from ._mas_read import field as xml_field

#: MAS-Orchestra agent names -> orchrm agent types (matched case-insensitively, as MAS-Orchestra does). Its
#: library has a `PythonAgent` block, but its medium-level parser dispatches none ("Unknown agent name"), so
#: orchrm's `python` (and tool) agents have no name there.
AGENT_NAMES: dict[str, str] = {
    "CoTAgent": "cot",
    "SCAgent": "self_consistency",
    "DebateAgent": "debate",
    "ReflexionAgent": "reflexion",
    "WebSearchAgent": "search",
}
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
#: One Python string literal without prefix or triple quotes (escapes allowed), and a list body of them.
_PY_STRING = re.compile(r"'(?:[^'\\\n]|\\.){0,2000}'|\"(?:[^\"\\\n]|\\.){0,2000}\"", re.DOTALL)
_PY_LIST = re.compile(rf"\s*(?:(?:{_PY_STRING.pattern})\s*,\s*)*(?:(?:{_PY_STRING.pattern})\s*)?", re.DOTALL)


@dataclass
class MasOrchestraPlan:
    """A MAS-Orchestra plan as orchrm reads it: the `Plan`, plus the free texts orchrm plans have no field
    for (each agent's description, the `<thinking>` section), kept so a plan can be written back whole."""

    plan: Plan
    descriptions: dict[str, str] = field(default_factory=dict)
    thinking: str | None = None


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
    """`parse_mas_orchestra`, keeping what the `Plan` has no field for (descriptions, thinking), so that `to_mas_orchestra` can write the plan back whole. `text` is one
    reply's plan region: its `<thinking>` section is kept as text, never read as plan (`mas.completion` drops
    reasoning before it calls here); of several plans (each ending with its `<edge>` block) the last is read."""
    if not isinstance(text, str):
        raise PlanError("parse", f"the orchestrator's output is a {type(text).__name__}, not text")
    if not text.strip():
        raise PlanError("parse", "the orchestrator's output is empty")
    if len(text) > MAX_TEXT_CHARS:
        raise PlanError("too_large", f"{len(text)} characters, at most {MAX_TEXT_CHARS} are read")
    _refuse_lookalike_tags(text)
    thinking_spans = _bounded(lambda: spans(text, "thinking", MAX_AGENT_BLOCKS))
    thinking = thinking_spans[0].content.strip() if thinking_spans else None
    body = _cut(text, thinking_spans)
    segments = _bounded(lambda: plan_segments(body, limit=MAX_AGENT_BLOCKS))
    plan_text = segments[-1]
    blocks_ = _bounded(lambda: spans(plan_text, "agent", MAX_AGENT_BLOCKS))
    if not blocks_:
        answer = xml_field(plan_text, "answer")
        if answer:  # MAS-Orchestra takes an empty one for no answer
            return MasOrchestraPlan(Plan(answer=answer), thinking=thinking)
        raise PlanError("parse", "no <agent> block or non-empty <answer> found in the output")
    agents: list[AgentSpec] = []
    descriptions: dict[str, str] = {}
    dropped: dict[str, list[str]] = {}
    for i, b in enumerate(blocks_):
        spec, description, unknown = _agent(b.content, i)
        if any(a.id == spec.id for a in agents):
            continue  # MAS-Orchestra runs the first block of an id and never the later ones
        agents.append(spec)
        if description:
            descriptions[spec.id] = description
        if unknown:
            dropped[spec.id] = unknown
    edge_block = xml_field(plan_text, "edge")
    edges = _edges(edge_block) if edge_block else []
    agents, order_only = _data_flow(agents, edges)
    plan = Plan(agents=agents, dropped_options=dropped)
    order = [Edge(src=s, dst=d) for s, d in order_only]
    plan = plan.model_copy(update={"edges": plan.implied_edges() + order, "order_edges": order})
    return MasOrchestraPlan(plan, descriptions, thinking)


def several_plans(text: str) -> int:
    """How many plans a region holds (each ending with its `<edge>` block); MAS-Orchestra reads all agent
    blocks of all of them with the first `<edge>` block, orchrm the last plan."""
    return len(
        _bounded(lambda: plan_segments(_cut(text, spans(text, "thinking", MAX_AGENT_BLOCKS)), limit=MAX_AGENT_BLOCKS))
    )


def _bounded(read):  # noqa: ANN001, ANN202 - a thunk of the scanner, whose only exception is its limit
    try:
        return read()
    except ValueError as exc:
        raise PlanError("too_many_blocks", str(exc)) from None


def _cut(text: str, parts: list[Span]) -> str:
    """`text` without the given blocks."""
    kept, pos = [], 0
    for p in parts:
        kept.append(text[pos : p.start])
        pos = p.end
    kept.append(text[pos:])
    return "".join(kept)


#: A tag of the format spelled with a character Python's case folding reads as ASCII (`ſ` as s, `K` as k,
#: `ı`/`İ` as i): MAS-Orchestra reads it as that tag, orchrm refuses the text rather than guess.
_LOOKALIKE = re.compile(r"</?([A-Za-z_\u017f\u212a\u0131\u0130]{2,40})>")
_FOLD = str.maketrans({"\u017f": "s", "\u212a": "k", "\u0131": "i", "\u0130": "i"})


def _refuse_lookalike_tags(text: str) -> None:
    for m in _LOOKALIKE.finditer(text):
        name = m.group(1)
        if not name.isascii() and name.translate(_FOLD).lower() in _TAGS:
            raise PlanError(
                "lookalike_tag", f"{m.group(0)!r} at character {m.start()} reads as a tag only by case folding"
            )


def _agent(content: str, index: int) -> tuple[AgentSpec, str, list[str]]:
    where = f"agent block {index + 1}"
    agent_id = (xml_field(content, "agent_id") or "").strip()
    if not agent_id:
        raise PlanError("parse", f"{where} has no <agent_id>")
    if len(agent_id) > 40:  # checked before the id is quoted in any message
        raise PlanError("schema", f"{where}: agent_id {agent_id[:40]!r}... is over 40 characters", agent=agent_id[:40])
    name = (xml_field(content, "agent_name") or "").strip()
    agent_type = _BY_LOWER.get(name.lower())
    if agent_type is None:
        known = ", ".join(AGENT_NAMES)
        why = (
            ' (MAS-Orchestra\'s medium-level parser runs none: "Unknown agent name")'
            if name.lower() == "pythonagent"
            else ""
        )
        raise PlanError(
            "unknown_type", f"agent {agent_id!r} has agent_name {name[:60]!r}{why}; known: {known}", agent=agent_id
        )
    arguments = xml_field(content, "required_arguments") or ""
    agent_input = xml_field(arguments, "agent_input") or ""
    if agent_input == '""':  # MAS-Orchestra's spelling of "the original question" (and `''` is not one)
        agent_input = ""
    options: dict[str, object] = {}
    bounds = option_bounds(agent_type) or {}
    # The argument each option is written as: MAS-Orchestra's own name where it has one, else the option's.
    option_of = {_ARGUMENT_NAMES.get((agent_type, o), o): o for o in bounds}
    try:
        names = child_tags(arguments, MAX_ARGUMENTS)
    except ValueError:
        raise PlanError("too_many_blocks", f"more than {MAX_ARGUMENTS} arguments in {where}") from None
    unknown = [n for n in names if n != "agent_input" and n not in option_of]
    for tag, option in option_of.items():
        raw = xml_field(arguments, tag)
        if raw is None:
            continue
        if isinstance(bounds[option], RolesOption):
            options[option] = _roles(raw, agent_id)
        else:
            options[option] = _integer(raw, agent_id, option)
    try:
        spec = AgentSpec(id=agent_id, type=agent_type, input=agent_input or ORIGINAL_QUESTION_INPUT, options=options)
    except ValidationError as exc:  # the bounds are checked above; kept so a new AgentSpec rule is a PlanError
        err = exc.errors()[0]
        raise PlanError(
            "schema", f"agent {agent_id!r} {'.'.join(map(str, err['loc']))}: {err['msg']}", agent=agent_id
        ) from None
    return spec, (xml_field(content, "agent_description") or "").strip(), unknown


def _integer(raw: str, agent_id: str, option: str) -> int:
    value = raw.strip()
    if not _INT.fullmatch(value):
        raise PlanError(
            "options", f"agent {agent_id!r} option {option}={value[:40]!r} must be an integer", agent=agent_id
        )
    return int(value)


def _roles(raw: str, agent_id: str) -> list[str]:
    """`["A", "B"]` as JSON, or a flat list of Python string literals (`['A', 'B']`, `['O\\'Brien', "B",]`, as
    MAS-Orchestra's `ast.literal_eval` reads one): each literal is matched whole by a pattern before its escapes
    are decoded, so nothing but a string is ever read. MAS-Orchestra's own rule follows: at least two roles,
    each of two characters or more (it drops a debate block that breaks it)."""
    value = raw.strip()
    try:
        parsed = safejson.loads(value, safejson.Limits(max_chars=20_000, max_depth=2, max_number_chars=20))
    except safejson.UnsafeJSONError:
        parsed = _python_strings(value)
    if not isinstance(parsed, list) or not all(isinstance(r, str) for r in parsed):
        raise PlanError(
            "options", f"agent {agent_id!r} debate_roles {value[:60]!r} is not a list of strings", agent=agent_id
        )
    if len(parsed) < 2 or any(len(r) < 2 for r in parsed):
        raise PlanError(
            "options",
            f"agent {agent_id!r} debate_roles {value[:60]!r}: MAS-Orchestra needs two roles or more, each of two "
            "characters or more (it drops the block)",
            agent=agent_id,
        )
    return parsed


def _python_strings(value: str) -> list[str] | None:
    if len(value) > 20_000 or not (value.startswith("[") and value.endswith("]")):
        return None
    inner = value[1:-1]
    if _PY_LIST.fullmatch(inner) is None:
        return None
    try:
        with warnings.catch_warnings():  # an unknown escape (`\\d`) is a warning there, kept as written
            warnings.simplefilter("ignore")
            return [ast.literal_eval(m.group(0)) for m in _PY_STRING.finditer(inner)]
    except (SyntaxError, ValueError):  # a malformed escape (`\\N`, `\\x1`): MAS-Orchestra cannot read it either
        return None


def _edges(content: str) -> list[tuple[str, str]]:
    """The `<edge>` block's pairs, as MAS-Orchestra reads them: the n-th `<from>` with the n-th `<to>`,
    stripped (repeats kept: its execution order counts them). Unequal counts, which MAS-Orchestra truncates
    silently, are a `PlanError` here."""
    froms, tos = _bounded(lambda: pairs(content, MAX_EDGES))
    for end in (*froms, *tos):
        if len(end) > 40:  # no agent id is longer; checked before the text is quoted in any message
            raise PlanError(
                "unknown_edge_end", f"edge end {end[:40]!r}... names no agent (ids have at most 40 characters)"
            )
    if len(froms) != len(tos):
        raise PlanError(
            "edge_pairs", f"the <edge> block has {len(froms)} <from> and {len(tos)} <to>; each edge needs one of each"
        )
    return list(zip(froms, tos, strict=True))
