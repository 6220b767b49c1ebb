"""MAS-Orchestra's reading of a reply's text, field by field, as its medium-level parser reads it
(`mas_r1_reasoner/rewards/utils/harmony_parser/medium.py` with `agents/common.py`'s `extract_xml`).

- A field `<tag>` is the first one in the text, matched with Python's Unicode case folding (so `<anſwer>` is an
  `<answer>`, as there); its content runs to the first `</tag>` after it, or, when none follows (an inner tag
  left unclosed, as in MAS-Orchestra's own IGSM examples), to the next tag-like `<...>`, or to the end; stripped.
- Agent blocks are every `<agent>...</agent>`, each closed by the first `</agent>` after it.
- A plan ends with its `<edge>` block: a text holding several (a draft, then the final plan) holds several plans.

No entity is expanded and nothing is evaluated. Every search starts where the last one ended or is bounded by
the last closing mark, so a scan is linear in the text whatever it holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

#: Python's own case folding, as MAS-Orchestra's `re.IGNORECASE` applies it to `str` patterns.
_FLAGS = re.IGNORECASE | re.DOTALL
#: What `extract_xml` takes for "the next tag" after an unclosed one.
_TAG_LIKE = re.compile(r"<[^>]+>")


@lru_cache(maxsize=64)
def _mark(tag: str) -> re.Pattern[str]:
    return re.compile(re.escape(tag), _FLAGS)


def field(text: str, tag: str) -> str | None:
    """The content of the first `<tag>` in `text` as `extract_xml` reads it (module docstring), or None when
    the text has no `<tag>`. (`extract_xml` gives "" for both; callers that care tell them apart.)"""
    opened = _mark(f"<{tag}>").search(text)
    if opened is None:
        return None
    closed = _mark(f"</{tag}>").search(text, opened.end())
    if closed is not None:
        return text[opened.end() : closed.start()].strip()
    # `<[^>]+>` from a `<` runs to the next `>`: bounded by the last `>`, each try is short or succeeds.
    last = text.rfind(">")
    following = _TAG_LIKE.search(text, opened.end(), last + 1) if last > opened.end() else None
    return text[opened.end() : following.start() if following else len(text)].strip()


@dataclass(frozen=True)
class Span:
    """One `<tag>...</tag>` of the text: its raw content and where the whole block starts and ends."""

    content: str
    start: int
    end: int


def spans(text: str, tag: str, limit: int) -> list[Span]:
    """Every `<tag>...</tag>` in order, each closed by the first `</tag>` after its opening (`re.findall`'s
    reading of `<tag>(.*?)</tag>`). More than `limit` raises `ValueError` before more are built."""
    opener, closer = _mark(f"<{tag}>"), _mark(f"</{tag}>")
    out: list[Span] = []
    pos = 0
    while (opened := opener.search(text, pos)) is not None:
        closed = closer.search(text, opened.end())
        if closed is None:  # no later opening has a closing either
            return out
        if len(out) == limit:
            raise ValueError(f"more than {limit} <{tag}> blocks")
        out.append(Span(text[opened.end() : closed.start()], opened.start(), closed.end()))
        pos = closed.end()
    return out


def holds_plan_tags(text: str) -> bool:
    """Whether MAS-Orchestra would read an agent or an edge block out of `text` (reasoning orchrm drops)."""
    return _has_agent(text) or _mark("<edge>").search(text) is not None


def plan_segments(text: str, *, limit: int) -> list[str]:
    """The plans a text holds: with two `<edge>` blocks or more, each plan runs to the end of its `<edge>` block
    and agent blocks after the last one are a plan of their own; parts without an agent block are no plan. One
    segment (the whole text) when fewer than two such plans are found."""
    edges = spans(text, "edge", limit)
    if len(edges) < 2:
        return [text]
    cuts = [0, *(e.end for e in edges), len(text)]
    out = [text[a:b] for a, b in zip(cuts, cuts[1:]) if _has_agent(text[a:b])]
    return out if len(out) > 1 else [text]


def _has_agent(text: str) -> bool:
    opened = _mark("<agent>").search(text)
    return opened is not None and _mark("</agent>").search(text, opened.end()) is not None


def pairs(edge_block: str, limit: int) -> tuple[list[str], list[str]]:
    """The stripped `<from>` and `<to>` texts of an edge block, in order (MAS-Orchestra zips them)."""
    return (
        [s.content.strip() for s in spans(edge_block, "from", limit)],
        [s.content.strip() for s in spans(edge_block, "to", limit)],
    )


#: Tags orchrm reads of an agent's `<required_arguments>` besides the input: written as `<name>`.
_CHILD = re.compile(r"<([A-Za-z_][A-Za-z0-9_\-]{0,63})>")


def child_tags(required_arguments: str, limit: int) -> list[str]:
    """The distinct tag names opened in a `<required_arguments>` text, lower-cased, in order (at most `limit`)."""
    names: dict[str, None] = {}
    for m in _CHILD.finditer(required_arguments):
        names.setdefault(m.group(1).lower())
        if len(names) > limit:
            raise ValueError(f"more than {limit} arguments")
    return list(names)


def closes_inside(text: str, names: tuple[str, ...]) -> str | None:
    """The first `<name>` or `</name>` for a name in `names` inside `text`, matched with Python's Unicode case
    folding as MAS-Orchestra's regexes match (such a text cannot be written as a block's content: MAS-Orchestra
    would read the tag), or None."""
    m = re.search("</?(" + "|".join(re.escape(n) for n in names) + ")>", text, _FLAGS)
    return m.group(0) if m else None
