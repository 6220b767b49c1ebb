"""The counterfactual edit kinds: one registry (`EDITS`) of pure, seeded generators of candidate plan edits.

Each kind yields candidate edited plans in a seeded order, with a description of what it changed; `edits.edit_plan`
validates them and keeps the first that validates. Kinds:

- `swap-entity`: an entity the plan names (one of the question's, or any name of the task's world) replaced
  everywhere in the plan, as a whole word, by another name of its group that the plan does not name;
- `swap-number`: a number written in the plan replaced everywhere, as a whole token, by a nearby other number;
- `drop-hop`: a non-final agent removed; its readers read its own inputs instead (`${x}` becomes x's references);
- `reorder-hops`: two connected agents exchange their sub-task texts, each keeping its type and references, so
  the plan's shape stays and only the order of the hops' work changes;
- `break-reference`: a reference points at the wrong upstream (two references of one agent swap places, two
  agents' references swap, one is redirected) or, when none of those runs, is spelled as plain text;
- `swap-attribute`: a `lookup` tool's attribute replaced by another the records know (`employees of X` ->
  `founding year of X`); applies only to plans with a lookup;
- `flip-operator`: one arithmetic or comparison operator written between operands flipped (`+` <-> `-`,
  `*` <-> `/`, `<` <-> `>`, `<=` <-> `>=`), or the two quoted branches of `'A' if ... else 'B'` exchanged: a
  sum becomes a difference, a comparison picks the other side;
- `paraphrase`: each agent's instruction frame reworded by fixed rules (`Find` -> `Look up`, or a `Sub-task:`
  frame), deterministic, never touching an entity, a number or a reference.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

from .. import safejson
from ..mas.agents.tools import BadLookup, parse_lookup
from ..mas.plans import Plan
from ..tasks.world_records import ATTRIBUTES

#: Every attribute name the lookup tool knows, in the records' order (entity kinds flattened).
LOOKUP_ATTRIBUTES: tuple[str, ...] = tuple(a for names in ATTRIBUTES.values() for a in names)

EditKind = Literal[
    "swap-entity",
    "swap-number",
    "drop-hop",
    "reorder-hops",
    "break-reference",
    "paraphrase",
    "swap-attribute",
    "flip-operator",
]

#: Replacements tried per swapped entity or number.
SWAPS_PER_TOKEN = 3

# Anything written like a reference, valid or not: protected from every text edit.
_REF_TOKEN = re.compile(r"\$\{[^{}]*\}")
# A number token: digits with optional thousands commas and decimals, not part of a word or id (`a1`, `v2.0`).
NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
_FRAME = "Sub-task: "


@dataclass(frozen=True)
class EditContext:
    """What a kind may draw replacements from."""

    entities: tuple[str, ...]  # the question's own entities
    groups: tuple[tuple[str, ...], ...]  # the world's names by kind (people, companies, cities)

    @property
    def pool(self) -> list[str]:
        return list(dict.fromkeys([*self.entities, *(n for g in self.groups for n in g)]))


Candidates = Iterator[tuple[Plan, str]]


def _with_inputs(plan: Plan, inputs: dict[str, str], drop: str | None = None) -> Plan:
    """The plan with some agents' inputs replaced (and agent `drop` removed); edges left to the validator,
    which completes them from the references."""
    agents = [a.model_copy(update={"input": inputs.get(a.id, a.input)}) for a in plan.agents if a.id != drop]
    dropped = {k: v for k, v in plan.dropped_options.items() if k != drop}
    return plan.model_copy(update={"agents": agents, "edges": [], "dropped_options": dropped})


def _map_text(text: str, fn: Callable[[str], str], protect: re.Pattern[str] = _REF_TOKEN) -> str:
    """`fn` applied to the parts of `text` outside `protect`'s matches; the matches kept as they are."""
    pieces, kept = protect.split(text), protect.findall(text)
    return "".join(fn(p) + k for p, k in zip(pieces, [*kept, ""], strict=True))


def _map_inputs(plan: Plan, fn: Callable[[str], str]) -> Plan:
    return _with_inputs(plan, {a.id: _map_text(a.input, fn) for a in plan.agents})


def _word(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")


def _names_in(plan: Plan, name: str) -> bool:
    """Whether the plan names `name` as a whole word outside its references."""
    pattern = _word(name)
    return any(pattern.search(p) for a in plan.agents if name in a.input for p in _REF_TOKEN.split(a.input))


def numbers_in(text: str) -> list[str]:
    """The number tokens of a text outside its references, in order."""
    return [n for p in _REF_TOKEN.split(text) for n in NUMBER.findall(p)]


# ---- the kinds ----------------------------------------------------------------------------------------------


def _swap_entity(plan: Plan, ctx: EditContext, rng: random.Random) -> Candidates:
    named = [n for n in ctx.pool if _names_in(plan, n)]
    own = [n for n in named if n in ctx.entities]
    rng.shuffle(own)
    others = [n for n in named if n not in ctx.entities]
    rng.shuffle(others)
    for name in own + others:
        group = next((g for g in ctx.groups if name in g), None)
        options = sorted(n for n in (group or ctx.pool) if n != name and not _names_in(plan, n))
        pattern = _word(name)
        for new in rng.sample(options, min(SWAPS_PER_TOKEN, len(options))):
            yield _map_inputs(plan, lambda s, p=pattern, r=new: p.sub(lambda _: r, s)), f"{name!r} -> {new!r}"


def _swap_number(plan: Plan, ctx: EditContext, rng: random.Random) -> Candidates:
    tokens = list(dict.fromkeys(n for a in plan.agents for n in numbers_in(a.input)))
    rng.shuffle(tokens)
    for token in tokens:
        for new in nearby_numbers(token, rng):

            def swap(s: str, old: str = token, r: str = new) -> str:
                return NUMBER.sub(lambda m: r if m.group() == old else m.group(), s)

            yield _map_inputs(plan, swap), f"{token} -> {new}"


def nearby_numbers(token: str, rng: random.Random, k: int = SWAPS_PER_TOKEN) -> list[str]:
    """Up to `k` other numbers near `token`, written as it is (its decimals, its thousands commas)."""
    whole, _, frac = token.replace(",", "").partition(".")
    value = safejson.bounded_int(whole + frac, high=10**15)
    if value is None:
        return []
    steps = {1, 2, 3, 5, 10, max(1, round(value * 0.1)), max(1, round(value * 0.5))}
    near = sorted({value + s for s in steps} | {value - s for s in steps if value - s >= 0})
    return [_written(v, len(frac), "," in token) for v in rng.sample(near, min(k, len(near)))]


def _written(value: int, decimals: int, commas: bool) -> str:
    whole, frac = divmod(value, 10**decimals)
    head = f"{whole:,}" if commas else str(whole)
    return f"{head}.{frac:0{decimals}d}" if decimals else head


def _readers(plan: Plan) -> set[str]:
    return {ref for a in plan.agents for ref in a.references()}


def _drop_hop(plan: Plan, ctx: EditContext, rng: random.Random) -> Candidates:
    droppable = [a for a in plan.agents if a.id in _readers(plan)]
    rng.shuffle(droppable)
    for x in droppable:
        token, feed = f"${{{x.id}}}", " ".join(f"${{{u}}}" for u in x.references())
        inputs = {a.id: _tidy(a.input.replace(token, feed)) for a in plan.agents if token in a.input}
        yield _with_inputs(plan, inputs, drop=x.id), f"dropped {x.id} ({x.type})"


def _tidy(text: str) -> str:
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def _reorder_hops(plan: Plan, ctx: EditContext, rng: random.Random) -> Candidates:
    links = [(ref, a.id) for a in plan.agents for ref in a.references()]
    rng.shuffle(links)
    for u, v in links:
        au, av = plan.agent(u), plan.agent(v)
        if _REF_TOKEN.sub("", au.input).split() != _REF_TOKEN.sub("", av.input).split():
            inputs = {u: _refilled(av.input, au.references()), v: _refilled(au.input, av.references())}
            yield _with_inputs(plan, inputs), f"swapped the sub-tasks of {u} and {v}"


def _refilled(text: str, refs: list[str]) -> str:
    """`text` with its reference slots filled by `refs` in order: slots left over are emptied, references
    left over appended."""
    tokens = iter(f"${{{r}}}" for r in refs)
    filled = _REF_TOKEN.sub(lambda _: next(tokens, ""), text)
    return re.sub(r"\s+([.,;:?!])", r"\1", _tidy(" ".join([filled, *tokens])))


def _break_reference(plan: Plan, ctx: EditContext, rng: random.Random) -> Candidates:
    """Wrong-upstream breaks first (they may keep the plan runnable), plain-text ones last."""
    refs = [(a.id, r) for a in plan.agents for r in a.references()]
    ids = [a.id for a in plan.agents]
    within = [(a.id, x, y) for a in plan.agents for x, y in combinations(a.references(), 2)]
    across = [(p, q) for p, q in combinations(refs, 2) if p[0] != q[0] and p[1] != q[1]]
    redirect = [(a, x, y) for a, x in refs for y in ids if y not in (a, x) and y not in plan.agent(a).references()]
    unlink = list(refs)
    for tier in (within, across, redirect, unlink):
        rng.shuffle(tier)
    for a, x, y in within:
        text = _swap_tokens(plan.agent(a).input, f"${{{x}}}", f"${{{y}}}")
        yield _with_inputs(plan, {a: text}), f"{a}: ${{{x}}} <-> ${{{y}}}"
    for (a, x), (b, y) in across:
        inputs = {a: _replace(plan.agent(a).input, x, f"${{{y}}}"), b: _replace(plan.agent(b).input, y, f"${{{x}}}")}
        yield _with_inputs(plan, inputs), f"{a}: ${{{x}}} <-> {b}: ${{{y}}}"
    for a, x, y in redirect:
        yield _with_inputs(plan, {a: _replace(plan.agent(a).input, x, f"${{{y}}}")}), f"{a}: ${{{x}}} -> ${{{y}}}"
    for a, x in unlink:
        yield _with_inputs(plan, {a: _replace(plan.agent(a).input, x, x)}), f"{a}: ${{{x}}} -> plain text {x!r}"


def _replace(text: str, ref: str, new: str) -> str:
    return text.replace(f"${{{ref}}}", new)


def _swap_tokens(text: str, x: str, y: str) -> str:
    """`x` and `y` exchanged wherever either is written."""
    return y.join(part.replace(y, x) for part in text.split(x))


# Instruction verbs reworded one for one, in one pass (a word is rewritten once): same meaning, other words.
_REWORDINGS = {
    "Find": "Look up",
    "Look up": "Find",
    "find": "look up",
    "look up": "find",
    "Calculate": "Compute",
    "Compute": "Calculate",
    "calculate": "compute",
    "compute": "calculate",
    "Determine": "Work out",
    "Work out": "Determine",
    "determine": "work out",
    "work out": "determine",
    "Identify": "Name",
    "Check": "Verify",
    "Verify": "Check",
    "Return": "Give",
    "Give": "Return",
    "Retrieve": "Fetch",
    "Fetch": "Retrieve",
    "retrieve": "fetch",
    "Search for": "Look for",
    "Look for": "Search for",
    "Subtract": "Take away",
    "Take away": "Subtract",
}
_VERBS = re.compile(
    r"(?<![\w-])(" + "|".join(re.escape(w) for w in sorted(_REWORDINGS, key=len, reverse=True)) + r")(?![\w-])"
)


def _paraphrase(plan: Plan, ctx: EditContext, rng: random.Random) -> Candidates:
    names = sorted((n for n in ctx.pool if any(n in a.input for a in plan.agents)), key=len, reverse=True)
    protect = re.compile("|".join([_REF_TOKEN.pattern, *(re.escape(n) for n in names)]))
    inputs: dict[str, str] = {}
    changes: list[str] = []
    for a in plan.agents:
        reworded = _map_text(a.input, lambda s: _VERBS.sub(lambda m: _REWORDINGS[m.group()], s), protect)
        if reworded != a.input:
            changes.append(f"{a.id} reworded")
        elif a.input.startswith(_FRAME):
            reworded = a.input[len(_FRAME) :]
            changes.append(f"{a.id} unframed")
        else:
            reworded = _FRAME + a.input
            changes.append(f"{a.id} framed")
        inputs[a.id] = reworded
    yield _with_inputs(plan, inputs), "; ".join(changes)


def _swap_attribute(plan: Plan, ctx: EditContext, rng: random.Random) -> Candidates:
    lookups = []
    for a in plan.agents:
        try:
            attribute, _ = parse_lookup(a.input) if a.type == "lookup" else ("", "")
        except BadLookup:
            continue
        if attribute in LOOKUP_ATTRIBUTES:
            lookups.append((a, attribute))
    rng.shuffle(lookups)
    for a, attribute in lookups:
        options = [x for x in LOOKUP_ATTRIBUTES if x != attribute]
        for new in rng.sample(options, min(SWAPS_PER_TOKEN, len(options))):
            text = re.sub(rf"^\s*{re.escape(attribute)}", new, a.input, count=1, flags=re.IGNORECASE)
            yield (
                _with_inputs(plan, {**{b.id: b.input for b in plan.agents}, a.id: text}),
                f"{a.id}: {attribute!r} -> {new!r}",
            )


# An operator between operands: spaced (`a + b`), or touching a reference on either side (`${a1}-${a2}`). A hyphen
# inside a word or a sign before a number (`-3`) is not one.
_OPERATOR = re.compile(r"(?:(?<=\s)|(?<=\}))(<=|>=|[-+*/<>])(?=\s|\$\{)")
_FLIPPED = {"+": "-", "-": "+", "*": "/", "/": "*", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
# A two-way choice as calc writes it: 'A' if ... else 'B' (either quote, the same one on both sides of a branch).
_BRANCHES = re.compile(r"""(['"])([^'"]+)\1(\s+if\s.+?\selse\s+)(['"])([^'"]+)\4""")


def _flip_operator(plan: Plan, ctx: EditContext, rng: random.Random) -> Candidates:
    flips: list[tuple[str, int, int, str, str]] = []  # (agent, start, end, replacement, description)
    for a in plan.agents:
        refs = [m.span() for m in _REF_TOKEN.finditer(a.input)]
        for m in _OPERATOR.finditer(a.input):
            if not any(lo <= m.start() < hi for lo, hi in refs):
                flips.append(
                    (a.id, *m.span(), _FLIPPED[m.group()], f"{a.id}: {m.group()!r} -> {_FLIPPED[m.group()]!r}")
                )
        for m in _BRANCHES.finditer(a.input):
            if m.group(2) != m.group(5):
                swapped = f"{m.group(4)}{m.group(5)}{m.group(4)}{m.group(3)}{m.group(1)}{m.group(2)}{m.group(1)}"
                flips.append((a.id, *m.span(), swapped, f"{a.id}: the if/else branches exchanged"))
    rng.shuffle(flips)
    for agent, start, end, new, description in flips:
        text = plan.agent(agent).input
        yield _with_inputs(plan, {agent: text[:start] + new + text[end:]}), description


EDITS: dict[str, Callable[[Plan, EditContext, random.Random], Candidates]] = {
    "swap-entity": _swap_entity,
    "swap-number": _swap_number,
    "drop-hop": _drop_hop,
    "reorder-hops": _reorder_hops,
    "break-reference": _break_reference,
    "paraphrase": _paraphrase,
    "swap-attribute": _swap_attribute,
    "flip-operator": _flip_operator,
}
EDIT_KINDS: tuple[str, ...] = tuple(EDITS)
