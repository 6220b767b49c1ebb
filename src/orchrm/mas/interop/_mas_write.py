"""orchrm `Plan`s written in MAS-Orchestra's format, refused where MAS-Orchestra would run or read the text
otherwise (the reading side, and the format's description, are in `_mas_orchestra`)."""

from __future__ import annotations

import json

from ..plans import AgentSpec, Plan, PlanError
from ._mas_orchestra import _ARGUMENT_NAMES, _TAGS, AGENT_NAMES, ORIGINAL_QUESTION_INPUT, MasOrchestraPlan
from ._mas_read import closes_inside

__all__ = ["to_mas_orchestra"]

_TYPES = {t: name for name, t in AGENT_NAMES.items()}


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
    parts.extend(_agent_block(a, descriptions) for a in plan.agents)
    edges = list(dict.fromkeys((e.src, e.dst) for e in [*plan.implied_edges(), *plan.edges]))
    if edges:
        lines = [f"  <from>{_text(s, 'from')}</from><to>{_text(d, 'to')}</to>" for s, d in edges]
        parts.append("<edge>\n" + "\n".join(lines) + "\n</edge>")
    return "\n".join(parts) + "\n"


def _agent_block(a: AgentSpec, descriptions: dict[str, str]) -> str:
    """One `<agent>` block, or a `PlanError` (`unrepresentable`) where MAS-Orchestra would run or read it otherwise."""
    name = _TYPES.get(a.type)
    if name is None:
        raise PlanError(
            "unrepresentable",
            f"agent {a.id!r} has type {a.type!r}, which MAS-Orchestra has no agent for (its medium-level parser runs five names)"
            + (' (its PythonAgent fails there: "Unknown agent name")' if a.type == "python" else ""),
            agent=a.id,
        )
    if a.input.strip() == '""':
        raise PlanError(
            "unrepresentable", f"agent {a.id!r} input '\"\"' reads as the original question there", agent=a.id
        )
    description = _code_safe(descriptions.get(a.id) or f"{name}: an orchrm {a.type} agent.", a.id)
    agent_input = "" if a.input.strip() == ORIGINAL_QUESTION_INPUT else a.input
    args = [f"    <agent_input>{_text(agent_input, 'agent_input', a.id)}</agent_input>"]
    for key, value in sorted(a.options.items()):
        tag = _ARGUMENT_NAMES.get((a.type, key), key)
        if isinstance(value, list) and (len(value) < 2 or any(len(str(v)) < 2 for v in value)):
            raise PlanError(
                "unrepresentable",
                f"agent {a.id!r} {tag} {value!r}: MAS-Orchestra drops a debate with fewer than two roles or a "
                "role shorter than two characters",
                agent=a.id,
            )
        if isinstance(value, list):
            rendered = "[" + ", ".join(_json_string(str(v)) for v in value) + "]"
        else:
            rendered = str(value)
        args.append(f"    <{tag}>{_text(rendered, tag, a.id)}</{tag}>")
    return (
        "<agent>\n"
        f"  <agent_id>{_text(a.id, 'agent_id', a.id)}</agent_id>\n"
        f"  <agent_name>{name}</agent_name>\n"
        f"  <agent_description>{_text(description, 'agent_description', a.id)}</agent_description>\n"
        "  <required_arguments>\n" + "\n".join(args) + "\n  </required_arguments>\n"
        "</agent>"
    )


def _text(value: str, tag: str, agent: str | None = None) -> str:
    """`value` as a block's content: without surrounding whitespace (the format drops it), and refused when
    it holds a tag of the format (MAS-Orchestra reads an `<agent>` or `<edge>` anywhere, a closing tag ends a
    block early), matched with MAS-Orchestra's Unicode case folding."""
    bad = closes_inside(value, _TAGS)
    if bad is not None:
        what = f"agent {agent!r} {tag}" if agent else tag
        raise PlanError("unrepresentable", f"{what} contains {bad!r}, which MAS-Orchestra reads as a tag", agent=agent)
    return value.strip()


def _code_safe(description: str, agent: str) -> str:
    """MAS-Orchestra pastes a lone agent's description into generated Python inside `\"\"\"...\"\"\"`: a
    description holding `\"\"\"` or a backslash, or ending in `"`, would break that code or change its text."""
    if '"""' in description or "\\" in description or description.rstrip().endswith('"'):
        raise PlanError(
            "unrepresentable",
            f"agent {agent!r} agent_description holds a backslash or a triple quote, or ends in a quote, which breaks "
            "the code MAS-Orchestra generates for it",
            agent=agent,
        )
    return description


def _json_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)
