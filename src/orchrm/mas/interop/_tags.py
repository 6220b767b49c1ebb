"""A small scanner for the XML-like blocks model-written plans use (`<agent>...</agent>`), not an XML parser.

Model output is untrusted and is not XML: no entities are expanded (`&amp;` stays `&amp;`, `<!ENTITY` is
plain text), attributes, comments and CDATA mean nothing, and a block's content is the raw text up to the
first closing tag of the same name (ASCII case-insensitive: `<anſwer>` is no `<answer>`), as MAS-Orchestra's
own regex reads it. Every search starts where the previous one ended, so a scan is linear in the text whatever
it holds (an unclosed tag stops the scan at once instead of being retried from every later opening).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..plans import PlanError

#: A tag name as these formats write one: ASCII letters, digits, `_` and `-`, starting with a letter or `_`.
NAME = r"[A-Za-z_][A-Za-z0-9_\-]{0,63}"
_ANY_OPEN = re.compile(rf"<({NAME})>")


@dataclass(frozen=True)
class Block:
    """One `<name>content</name>`: `name` as written (case kept), `content` raw, `start` where `<` is."""

    name: str
    content: str
    start: int


@lru_cache(maxsize=64)
def _close(name: str) -> re.Pattern[str]:
    return re.compile(f"</{re.escape(name)}>", re.IGNORECASE | re.ASCII)


@lru_cache(maxsize=16)
def _opens(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("<(" + "|".join(re.escape(n) for n in names) + ")>", re.IGNORECASE | re.ASCII)


def blocks(text: str, names: tuple[str, ...] | None = None, *, where: str, limit: int) -> list[Block]:
    """The blocks of `text` in order, each opened by `<name>` for a name in `names` (any name when None) and
    closed by the first `</name>` after it; text between blocks, and tags not opening a block, are skipped.

    An opening tag without its closing one is a `PlanError` (`unclosed`); more than `limit` blocks is one
    too (`too_many_blocks`), so a hostile text cannot make the caller build millions of records."""
    opener = _ANY_OPEN if names is None else _opens(names)
    out: list[Block] = []
    pos = 0
    while True:
        m = opener.search(text, pos)
        if m is None:
            return out
        name = m.group(1)
        end = _close(name.lower()).search(text, m.end())
        if end is None:
            raise PlanError("unclosed", f"<{name}> at character {m.start()} of {where} is never closed")
        if len(out) == limit:
            raise PlanError("too_many_blocks", f"more than {limit} blocks in {where}")
        out.append(Block(name=name, content=text[m.end() : end.start()], start=m.start()))
        pos = end.end()


def closes_inside(text: str, names: tuple[str, ...]) -> str | None:
    """The first `</name>` for a name in `names` inside `text` (such a text cannot be written as a block's
    content: it would end the block early), or None."""
    m = re.search("</(" + "|".join(re.escape(n) for n in names) + ")>", text, re.IGNORECASE | re.ASCII)
    return m.group(0) if m else None
