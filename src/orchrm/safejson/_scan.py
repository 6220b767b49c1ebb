"""`find_objects`: the JSON objects written inside prose (a model's reply), found in one left-to-right scan.

Each place an object may start (`_START`, at regex speed) is one attempt: `_shortcuts.doomed` first, which
settles at regex speed an attempt that must fail, then `_parse_object`, a token scan with a stack that takes
whole flat objects through `_shortcuts.flat_object`. An attempt that succeeds resumes the scan after its
object; one that fails resumes at the token that broke it, keeping whole objects completed inside it. No
character is read by two attempts, so the time is linear in the text.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ._document import DEFAULT, STRING, Limits, UnsafeJSONError, check_size
from ._shortcuts import FLAT_NUMBER_CHARS, doomed, flat_object

# Where an object may start: a brace, then its own closing brace or a key, a colon and the first character
# of a value. Prose braces (`{x}`, `${a1}`, a run of `{`, `{"quoted" words}`) are skipped at regex speed.
# The match ends where the first value starts and group 1 is the first key (None for `{}`), so an attempt
# begins at that value instead of re-reading what the regex already read.
_START = re.compile(r"\{[ \t\n\r]*(?:\}|(" + STRING.pattern + r')[ \t\n\r]*:[ \t\n\r]*(?=[-"{\[0-9tfnNI]))')
_TOKEN = re.compile(
    r"[ \t\n\r]*(?:"
    r"([{}\[\]:,])"  # 1 punctuation
    r'|(")'  # 2 string start
    r"|(-?[0-9][-+.eE0-9]*)"  # 3 number (checked below)
    r"|(true|false|null)"  # 4 literal
    r"|(NaN|-?Infinity)"  # 5 non-finite constant
    r")"
)
_KEY_COLON = re.compile(r'[ \t\n\r]*"([^"\\\x00-\x1f]*)"[ \t\n\r]*:')
_AFTER_PEEK = (',"', ', "', "}")
_OPEN_PEEK = ("{", " {")
_OPEN_NESTED = re.compile(r'[ \t\n\r]*(\{)[ \t\n\r]*"([^"\\\x00-\x1f]*)"[ \t\n\r]*:(?=[ \t\n\r]*[{\[])')
_AFTER_MEMBER = re.compile(r'[ \t\n\r]*(?:,[ \t\n\r]*"([^"\\\x00-\x1f]*)"[ \t\n\r]*:|(\}))')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
# Parser states: what the next token may be.
_VALUE, _FIRST_VALUE, _KEY, _FIRST_KEY, _COLON, _AFTER, _SLOW_KEY = range(7)


@dataclass
class Found:
    """What `find_objects` found: the objects, in order of their opening brace, and the first failed
    attempt that broke a rule other than `syntax` (prose is full of syntax errors; a 5,000-digit number in
    what looked like an object is worth reporting when nothing else is found)."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    refused: UnsafeJSONError | None = None


# Failures are returned, not raised, and carry a (rule, message) pair, not an exception: prose can hold a
# failed attempt every few characters, and raising costs more than the rest of an attempt.
_Failure = tuple[str, str]


def _string(text: str, at: int) -> tuple[str, int] | _Failure:
    m = STRING.match(text, at)
    if m is None:
        return ("syntax", "unterminated or invalid string")
    value = _string_value(m.group())
    return (value, m.end()) if type(value) is str else value


def _string_value(raw: str) -> str | _Failure:
    """A matched JSON string literal's text; a lone surrogate (escaped or raw) is a failure."""
    value = json.loads(raw) if "\\" in raw else raw[1:-1]
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return ("surrogate", f"lone UTF-16 surrogate {value[exc.start]!r} in a string")
    return value


def _number(token: str, limits: Limits) -> int | float | _Failure:
    if len(token) > limits.max_number_chars:
        return ("digits", f"a number of {len(token)} characters, at most {limits.max_number_chars}")
    if not _NUMBER.fullmatch(token):
        return ("syntax", "bad number")
    if "." in token or "e" in token or "E" in token:
        value = float(token)
        return value if math.isfinite(value) else ("non_finite", f"{token} overflows to infinity")
    return int(token)


def _scalar(text: str, at: int, end: int, kind: int, tok: str, limits: Limits) -> tuple[Any, int, _Failure | None]:
    """The string, number or literal whose token (group `kind` of `_TOKEN`) starts at `at` and ends at `end`:
    (value, offset after it, None), or (None, `at`, why)."""
    if kind == 2:
        got = _string(text, at)
        return (got[0], got[1], None) if type(got[1]) is int else (None, at, got)  # type: ignore[return-value]
    if kind == 3:
        if tok.isdigit() and (tok[0] != "0" or len(tok) == 1) and len(tok) <= limits.max_number_chars:
            return int(tok), end, None  # the common case, without the general number checks
        value = _number(tok, limits)
        return (None, at, value) if type(value) is tuple else (value, end, None)  # type: ignore[return-value]
    if kind == 4:
        return _LITERALS[tok], end, None
    return None, at, ("non_finite", f"{tok} is not a finite number")


def _parse_object(
    text: str,
    start: int,
    limits: Limits,
    inner: list[tuple[int, dict[str, Any]]],
    key: str,
    pos: int,
    key_colon: Any = _KEY_COLON.match,
    after_member: Any = _AFTER_MEMBER.match,
    startswith: Any = str.startswith,
    open_nested: Any = _OPEN_NESTED.match,
) -> tuple[dict[str, Any], int, None] | tuple[None, int, _Failure]:
    """The object opening at `start` (first `key` and colon read by `_START`, first value at `pos`) parsed with
    a stack, or None, the bad token's offset and why; objects closed on the way go to `inner` with offsets."""
    stack: list[list[Any]] = [[start, {}, key]]  # [offset, container, pending key]
    state = _VALUE
    while True:
        # Shortcuts inside objects: `, "key":` or `}` after a member, `"key":` where a key is due, each in one
        # match, tried only where the next characters promise them (compact JSON, as models write it). A key
        # that is not plain ASCII, and every error, goes the general way: `_step`.
        if state == _AFTER and type(stack[-1][1]) is dict and startswith(text, _AFTER_PEEK, pos):
            k = after_member(text, pos)
            if k is not None and k.lastindex == 2:
                pos = k.end()
                opened, value, _ = stack.pop()
                if not stack:
                    return value, pos, None
                _put(stack, inner, opened, value)
                continue
            if k is not None and k.group(1).isascii():
                stack[-1][2], pos, state = k.group(1), k.end(), _VALUE
                continue
        elif (state == _KEY or state == _FIRST_KEY) and startswith(text, '"', pos):
            k = key_colon(text, pos)
            if k is not None and k.group(1).isascii():
                stack[-1][2], pos, state = k.group(1), k.end(), _VALUE
                continue
        elif state <= _FIRST_VALUE and startswith(text, _OPEN_PEEK, pos) and len(stack) < limits.max_depth:
            k = open_nested(text, pos)  # `{"key":` whose value opens a container: not flat, so pushed at once
            if k is not None and k.group(2).isascii():
                stack.append([k.start(1), {}, k.group(2)])
                pos, state = k.end(), _VALUE
                continue
        pos, state, done = _step(text, pos, state, stack, inner, limits)
        if done is not None:
            return done


def _step(
    text: str,
    pos: int,
    state: int,
    stack: list[list[Any]],
    inner: list[tuple[int, dict[str, Any]]],
    limits: Limits,
    match: Any = _TOKEN.match,
    startswith: Any = str.startswith,
) -> tuple[int, int, Any]:
    """One token read the general way: (offset after it, the next state, None), or, once the object is complete
    or has failed, (offset, state, what `_parse_object` returns)."""
    m = match(text, pos)
    if m is None:
        return pos, state, (None, pos, ("syntax", "unexpected text"))
    kind = m.lastindex
    at, pos = m.start(kind), m.end()
    tok = text[at] if kind <= 2 else m.group(kind)
    value: Any
    if state == _AFTER:
        top = stack[-1]
        if tok == ",":  # in an object, the shortcut already found no plain key after it
            return pos, (_SLOW_KEY if type(top[1]) is dict else _VALUE), None
        if tok != ("}" if type(top[1]) is dict else "]"):
            return pos, state, (None, at, ("syntax", "expected ',' or a closing bracket"))
        opened, value, _ = stack.pop()
    elif state == _KEY or state == _FIRST_KEY or state == _SLOW_KEY:
        if kind == 2:
            return _key(text, at, pos, state, stack)
        if tok != "}" or state != _FIRST_KEY:
            return pos, state, (None, at, ("syntax", "expected a key"))
        opened, value, _ = stack.pop()
    elif state == _COLON:
        return (pos, _VALUE, None) if tok == ":" else (pos, state, (None, at, ("syntax", "expected ':'")))
    elif tok == "{" or tok == "[":
        if len(stack) >= limits.max_depth:
            return pos, state, (None, at, ("depth", f"nesting deeper than {limits.max_depth}"))
        flat = None
        if startswith(text, '{"', at) and limits.max_number_chars >= FLAT_NUMBER_CHARS:
            flat = flat_object(text, at)
        if flat is None:
            stack.append([at, {} if tok == "{" else [], None])
            return pos, (_FIRST_KEY if tok == "{" else _FIRST_VALUE), None
        opened, (value, pos) = at, flat
    elif kind >= 2:
        opened = at
        value, pos, why = _scalar(text, at, pos, kind, tok, limits)
        if why is not None:
            return pos, state, (None, pos, why)
    elif tok == "]" and state == _FIRST_VALUE:
        opened, value, _ = stack.pop()
    else:
        return pos, state, (None, at, ("syntax", "expected a value"))
    if not stack:  # `value` is complete: a scalar, or the container just closed
        return pos, state, (value, pos, None)
    _put(stack, inner, opened, value)
    return pos, _AFTER, None


def _key(text: str, at: int, pos: int, state: int, stack: list[list[Any]]) -> tuple[int, int, Any]:
    """`_step` on a key's string: it is kept on the open object's frame until its value is read."""
    got = _string(text, at)
    if type(got[1]) is not int:
        return pos, state, (None, at, got)
    stack[-1][2], pos = got
    return pos, _COLON, None


def _put(stack: list[list[Any]], inner: list[tuple[int, dict[str, Any]]], opened: int, value: Any) -> None:
    """A finished value into the container being built (a finished object into `inner` too)."""
    if type(value) is dict:
        inner.append((opened, value))
    top = stack[-1]
    if type(top[1]) is dict:
        top[1][top[2]] = value
    else:
        top[1].append(value)


def find_objects(text: str, limits: Limits = DEFAULT) -> Found:
    """The JSON objects written in `text`, which may be prose, in order of their opening brace.

    One scan: an attempt that succeeds resumes after the object; one that fails resumes at the token that
    broke it, keeping whole objects completed inside the attempt. No character is read by two attempts, so
    the time is linear in the text whatever it holds.
    """
    check_size(text, limits)
    found = Found()
    objects = found.objects
    search = _START.search
    inner: list[tuple[int, dict[str, Any]]] = []  # one list for every attempt: prose makes many
    doomed_ok = limits.max_number_chars >= FLAT_NUMBER_CHARS and limits.max_depth >= 3
    pos = 0
    while True:
        m = search(text, pos)
        if m is None:
            return found
        start, raw_key = m.start(), m.group(1)
        if raw_key is None:  # `{}`
            objects.append({})
            pos = m.end()
            continue
        if doomed_ok:
            failed = doomed(text, start)
            if failed is not None:
                pos = failed[0]
                objects.extend(failed[1])
                continue
        key = raw_key[1:-1] if raw_key.isascii() and "\\" not in raw_key else _string_value(raw_key)
        if type(key) is str:
            value, end, failure = _parse_object(text, start, limits, inner, key, m.end())
        else:
            value, end, failure = None, m.start(1), key
        if failure is None:
            objects.append(value)  # type: ignore[arg-type]
            pos = end
            inner.clear()  # objects inside a whole object are part of it, not found on their own
            continue
        if inner:
            objects.extend(obj for _, obj in sorted(inner, key=lambda pair: pair[0]))
            inner.clear()
        if failure[0] != "syntax" and found.refused is None:
            found.refused = UnsafeJSONError(failure[0], failure[1], position=end)
        pos = end if end > start else start + 1
