"""JSON from untrusted hands (model replies, HTTP bodies, user files) read in bounded, linear time.

Python's `json` recurses once per nesting level (deep input raises `RecursionError`), turns a 5,000-digit
integer into a `ValueError`, accepts `NaN`, `Infinity` and lone UTF-16 surrogates (`"\\ud800"`, which later
fail to encode anywhere), and computes the line of every error from the start of the text, so retrying
`raw_decode` from each brace of a long reply is quadratic. Every model-written or user-written JSON text in
orchrm goes through here instead; whatever the input, the answer is a value or an `UnsafeJSONError` naming
the rule broken:

    size        the text is longer than `Limits.max_chars`
    encoding    bytes that are not UTF-8
    surrogate   a lone UTF-16 surrogate, raw or escaped, anywhere in a string
    depth       more than `Limits.max_depth` nested arrays and objects
    digits      a number written with more than `Limits.max_number_chars` characters
    non_finite  NaN, Infinity, or a float that overflows to infinity (1e999)
    syntax      not JSON

`loads` reads one whole document at C speed after linear pre-checks; `read` is `loads` of a file (RM and
adapter cards, run.json, manifests, seals: files a user may edit, copy or damage); `find_objects` finds the
JSON objects written inside prose (a model's reply) with one left-to-right scan. `bounded_int` is the one
parse of an integer that comes from outside (a query parameter, a header): decimal digits within bounds, or
None.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

from .errors import OrchrmError

RULES = ("size", "encoding", "surrogate", "depth", "digits", "non_finite", "syntax")


class UnsafeJSONError(OrchrmError):
    """JSON text refused by one of the `RULES`; `position` is the character offset, where known."""

    def __init__(self, rule: str, message: str, *, position: int | None = None) -> None:
        super().__init__(f"{message} (json {rule})")
        self.rule = rule
        self.reason = message
        self.position = position


@dataclass(frozen=True)
class Limits:
    """Bounds on one JSON text. The defaults fit plans and HTTP bodies; trace files read larger lines."""

    max_chars: int | None = 4_000_000
    max_depth: int = 64
    # 100 characters hold any float and any integer a plan or a trace can mean; 4,300 is where Python's
    # int() starts refusing, and long before that a number is an attack, not data.
    max_number_chars: int = 100


DEFAULT = Limits()
#: Files on disk (cards, run.json, manifests, seals): local, so no size bound; depth and numbers bounded.
FILE = Limits(max_chars=None, max_depth=64, max_number_chars=100)

# A valid JSON string, unrolled so the regex engine never backtracks: plain runs between escapes.
_STRING = re.compile(r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _long_number(limits: Limits) -> re.Pattern[str]:
    return re.compile(r"[-+.eE0-9]{%d,}" % (limits.max_number_chars + 1))


def _decode(data: str | bytes) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnsafeJSONError("encoding", f"byte {exc.start} is not UTF-8 ({exc.reason})", position=exc.start) from None


def _check_size(text: str, limits: Limits) -> None:
    if limits.max_chars is not None and len(text) > limits.max_chars:
        raise UnsafeJSONError("size", f"{len(text)} characters, at most {limits.max_chars} allowed")


def _check_text(s: str) -> None:
    """A lone surrogate cannot be encoded as UTF-8, so it would fail at the first write, hash or request."""
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UnsafeJSONError(
                "surrogate", f"lone UTF-16 surrogate {s[exc.start]!r} in a string", position=exc.start
            ) from None


class _NonFinite(ValueError):
    pass


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


def _no_constant(name: str) -> Any:
    raise _NonFinite(name)


def _walk_strings(value: Any) -> None:
    """Every string in a decoded value (keys too), iteratively: depth is already bounded but cheap to keep."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            _check_text(v)
        elif isinstance(v, dict):
            for k, item in v.items():
                _check_text(k)
                todo.append(item)
        elif isinstance(v, list):
            todo.extend(v)


def loads(data: str | bytes, limits: Limits = DEFAULT) -> Any:
    """One whole JSON document (surrounding whitespace allowed), or `UnsafeJSONError`."""
    text = _decode(data)
    _check_size(text, limits)
    _check_text(text)  # raw surrogates; escaped ones are looked for after decoding
    # The pre-checks read the text with strings blanked out. Where the text is not JSON they may misjudge
    # what follows the first error, which only changes which rule is named for text json refuses anyway.
    skeleton = _STRING.sub('""', text)
    long = _long_number(limits).search(skeleton)
    if long:
        raise UnsafeJSONError(
            "digits", f"a number of {len(long.group())}+ characters, at most {limits.max_number_chars}", position=None
        )
    brackets = _NOT_BRACKET.sub("", skeleton)
    if len(brackets) > limits.max_depth:
        depth = max(accumulate(map(_STEP.__getitem__, brackets)))
        if depth > limits.max_depth:
            raise UnsafeJSONError("depth", f"nesting depth {depth}, at most {limits.max_depth}")
    try:
        value = json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except _NonFinite as exc:
        raise UnsafeJSONError("non_finite", f"{exc} is not a finite number") from None
    except json.JSONDecodeError as exc:
        raise UnsafeJSONError("syntax", f"{exc.msg} at line {exc.lineno} column {exc.colno}", position=exc.pos) from None
    except RecursionError:  # not reachable with the depth check; kept so no input can escape as a crash
        raise UnsafeJSONError("depth", "nested too deeply") from None
    if _ESCAPED_SURROGATE.search(text):
        _walk_strings(value)
    return value


def read(path: Path, limits: Limits = FILE) -> Any:
    """A whole JSON file through `loads`; a file that cannot be read raises `OSError` as `open` does."""
    return loads(Path(path).read_bytes(), limits)


def bounded_int(text: str | bytes | None, *, high: int, low: int = 0) -> int | None:
    """`text` as an integer in [low, high] when it is plain ASCII decimal digits, else None: a 5,000-digit
    run id or Content-Length is refused by its length before `int` sees it."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    if not text or not text.isascii() or not text.isdigit():
        return None
    digits = text.lstrip("0") or "0"  # int() counts leading zeros against its 4,300-digit limit
    if len(digits) > len(str(high)):
        return None
    value = int(digits)
    return value if low <= value <= high else None


# ---- JSON objects inside prose -------------------------------------------------------------------------

# Where an object may start: a brace, then its own closing brace or a key, a colon and the first character
# of a value. Prose braces (`{x}`, `${a1}`, a run of `{`, `{"quoted" words}`) are skipped at regex speed.
# The match ends where the first value starts and group 1 is the first key (None for `{}`), so an attempt
# begins at that value instead of re-reading what the regex already read.
_START = re.compile(r'\{[ \t\n\r]*(?:\}|(' + _STRING.pattern + r')[ \t\n\r]*:[ \t\n\r]*(?=[-"{\[0-9tfnNI]))')
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
    m = _STRING.match(text, at)
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
    text: str, start: int, limits: Limits, inner: list[tuple[int, dict[str, Any]]], key: str, pos: int,
    match: Any = _TOKEN.match, key_colon: Any = _KEY_COLON.match, after_member: Any = _AFTER_MEMBER.match,
    startswith: Any = str.startswith, open_nested: Any = _OPEN_NESTED.match,
) -> tuple[dict[str, Any], int, None] | tuple[None, int, _Failure]:
    """The object opening at `start` (first `key` and colon read by `_START`, first value at `pos`) parsed with
    a stack, or None, the bad token's offset and why; objects closed on the way go to `inner` with offsets."""
    stack: list[list[Any]] = [[start, {}, key]]  # [offset, container, pending key]
    state = _VALUE
    while True:
        # Shortcuts inside objects: `, "key":` or `}` after a member, `"key":` where a key is due, each in one
        # match, tried only where the next characters promise them (compact JSON, as models write it). A key
        # that is not plain ASCII, and every error, goes the general way below.
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
        m = match(text, pos)
        if m is None:
            return None, pos, ("syntax", "unexpected text")
        kind = m.lastindex
        at, pos = m.start(kind), m.end()
        tok = text[at] if kind <= 2 else m.group(kind)
        value: Any
        if state == _AFTER:
            top = stack[-1]
            if tok == ",":  # in an object, the shortcut above already found no plain key after it
                state = _SLOW_KEY if type(top[1]) is dict else _VALUE
                continue
            if tok != ("}" if type(top[1]) is dict else "]"):
                return None, at, ("syntax", "expected ',' or a closing bracket")
            opened, value, _ = stack.pop()
        elif state == _KEY or state == _FIRST_KEY or state == _SLOW_KEY:
            if kind == 2:
                got = _string(text, at)
                if type(got[1]) is not int:
                    return None, at, got  # type: ignore[return-value]
                stack[-1][2], pos = got
                state = _COLON
                continue
            if tok != "}" or state != _FIRST_KEY:
                return None, at, ("syntax", "expected a key")
            opened, value, _ = stack.pop()
        elif state == _COLON:
            if tok != ":":
                return None, at, ("syntax", "expected ':'")
            state = _VALUE
            continue
        elif tok == "{" or tok == "[":
            if len(stack) >= limits.max_depth:
                return None, at, ("depth", f"nesting deeper than {limits.max_depth}")
            flat = _flat_object(text, at) if startswith(text, '{"', at) and limits.max_number_chars >= _FLAT_NUMBER_CHARS else None
            if flat is None:
                stack.append([at, {} if tok == "{" else [], None])
                state = _FIRST_KEY if tok == "{" else _FIRST_VALUE
                continue
            opened, (value, pos) = at, flat
        elif kind >= 2:
            opened = at
            value, pos, why = _scalar(text, at, pos, kind, tok, limits)
            if why is not None:
                return None, pos, why
        elif tok == "]" and state == _FIRST_VALUE:
            opened, value, _ = stack.pop()
        else:
            return None, at, ("syntax", "expected a value")
        if not stack:  # `value` is complete: a scalar, or the container just closed
            return value, pos, None
        _put(stack, inner, opened, value)
        state = _AFTER


# An object whose values are all strings, short numbers or literals, matched whole at regex speed and decoded
# by `json` (small, so its error positions cost nothing): most of a plan's objects, and the inner objects of
# text that restarts a broken object again and again. Anything it does not take is parsed token by token,
# which decides every refusal; so it only has to be right about what it accepts.
_FLAT_NUMBER_CHARS = 20  # numbers the flat pattern takes; limits below this skip it
_SHORT_NUMBER = r"(?=[-+.eE0-9]{1,20}(?![-+.eE0-9]))-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_SCALAR = r"(?:" + _STRING.pattern + "|" + _SHORT_NUMBER + r"|true|false|null)"
_MEMBER = _STRING.pattern + r"[ \t\n\r]*:[ \t\n\r]*" + _SCALAR
_FLAT = re.compile(r"\{[ \t\n\r]*" + _MEMBER + r"(?:[ \t\n\r]*,[ \t\n\r]*" + _MEMBER + r")*[ \t\n\r]*\}")


_FLAT_DECODER = json.JSONDecoder(parse_float=_finite_float, parse_constant=_no_constant)


def _flat_object(text: str, at: int) -> tuple[dict[str, Any], int] | None:
    """The flat object opening at `at` and the offset after it, or None (not flat, or not plainly valid)."""
    m = _FLAT.match(text, at)
    if m is None:
        return None
    raw = m.group()
    if "\\u" in raw and _ESCAPED_SURROGATE.search(raw):
        return None
    if not raw.isascii():
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            return None
    try:
        return _FLAT_DECODER.raw_decode(raw)[0], m.end()
    except ValueError:  # a float that overflows to infinity
        return None


# An attempt that must fail with a syntax error and finds no object on the way: members whose keys and values
# cannot break a rule (printable ASCII strings, numbers of a few digits that are no longer token's prefix,
# literals, arrays of those), then a character that cannot continue the object. Text that restarts a broken
# object again and again is a run of these; one match each replaces the token scan, which would fail at the
# same character and resume there.
_WS = r"[ \t\n\r]*+"


def _safe_value(string: str) -> str:
    """A scalar or an array of scalars that cannot break a rule, with strings matching `string`."""
    scalar = r"(?:" + string + r"|-?(?:0|[1-9][0-9]{0,8})(?:\.[0-9]{1,8})?(?![-+.eE0-9])|(?:true|false|null)(?![a-zA-Z]))"
    return r"(?:" + scalar + r"|\[" + _WS + r"(?:" + scalar + r"(?:" + _WS + "," + _WS + scalar + r")*+" + _WS + r")?\])"


def _members(string: str, value: str) -> str:
    member = string + _WS + ":" + _WS + value
    return member + r"(?:" + _WS + "," + _WS + member + r")*+"


def _doomed_pattern(members: str) -> re.Pattern[str]:
    return re.compile(r"\{" + _WS + members + _WS + r"(?:," + _WS + r'(?=[^"\s])|(?=[^,}\s]))')


_ASCII = r'"[\x20\x21\x23-\x5b\x5d-\x7e]*+"'  # printable ASCII strings
_NO_BRACE = r'"[\x20\x21\x23-\x5b\x5d-\x7a\x7c\x7e]*+"'  # ... without braces
_DOOMED = _doomed_pattern(_members(_ASCII, _safe_value(_ASCII)))
# Members may also hold flat objects (found, as the token scan finds objects closed inside a failed attempt);
# no string holds a brace, so every brace inside the attempt opens one of them.
_NB_FLAT = r"\{" + _WS + r"(?:" + _members(_NO_BRACE, _safe_value(_NO_BRACE)) + _WS + r")?\}"
_DOOMED_INNER = _doomed_pattern(_members(_NO_BRACE, r"(?:" + _safe_value(_NO_BRACE) + "|" + _NB_FLAT + ")"))


def _doomed(text: str, start: int) -> tuple[int, list[dict[str, Any]]] | None:
    """Where the attempt at `start` fails and the objects closed inside it, when it must fail; else None."""
    m = _DOOMED_INNER.match(text, start)
    if m is None:
        m = _DOOMED.match(text, start)
        return None if m is None else (m.end(), [])
    end, found = m.end(), []
    at = text.find("{", start + 1, end)
    while at != -1:
        obj, after = _FLAT_DECODER.scan_once(text, at)  # matched above: valid, and safe to decode in place
        found.append(obj)
        at = text.find("{", after, end)
    return end, found


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
    _check_size(text, limits)
    found = Found()
    objects = found.objects
    search = _START.search
    inner: list[tuple[int, dict[str, Any]]] = []  # one list for every attempt: prose makes many
    doomed_ok = limits.max_number_chars >= _FLAT_NUMBER_CHARS and limits.max_depth >= 3
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
            doomed = _doomed(text, start)
            if doomed is not None:
                pos = doomed[0]
                objects.extend(doomed[1])
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
