"""The prose scanner's regex-speed paths: whole flat objects, and attempts that must fail.

`flat_object` matches an object whose values are all scalars in one regex and decodes it with `json`; `doomed`
recognises an attempt the token scan would abandon with a syntax error (text that restarts a broken object
again and again) and says where it fails and which flat objects closed inside it. Both only decide what they
accept: anything else goes to the token scan in _scan.py, which decides every refusal.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._document import ESCAPED_SURROGATE, STRING, finite_float, no_constant

# An object whose values are all strings, short numbers or literals, matched whole at regex speed and decoded
# by `json` (small, so its error positions cost nothing): most of a plan's objects, and the inner objects of
# text that restarts a broken object again and again. Anything it does not take is parsed token by token,
# which decides every refusal; so it only has to be right about what it accepts.
FLAT_NUMBER_CHARS = 20  # numbers the flat pattern takes; limits below this skip it
_SHORT_NUMBER = r"(?=[-+.eE0-9]{1,20}(?![-+.eE0-9]))-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_SCALAR = r"(?:" + STRING.pattern + "|" + _SHORT_NUMBER + r"|true|false|null)"
_MEMBER = STRING.pattern + r"[ \t\n\r]*:[ \t\n\r]*" + _SCALAR
_FLAT = re.compile(r"\{[ \t\n\r]*" + _MEMBER + r"(?:[ \t\n\r]*,[ \t\n\r]*" + _MEMBER + r")*[ \t\n\r]*\}")


_FLAT_DECODER = json.JSONDecoder(parse_float=finite_float, parse_constant=no_constant)


def flat_object(text: str, at: int) -> tuple[dict[str, Any], int] | None:
    """The flat object opening at `at` and the offset after it, or None (not flat, or not plainly valid)."""
    m = _FLAT.match(text, at)
    if m is None:
        return None
    raw = m.group()
    if "\\u" in raw and ESCAPED_SURROGATE.search(raw):
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
    scalar = (
        r"(?:" + string + r"|-?(?:0|[1-9][0-9]{0,8})(?:\.[0-9]{1,8})?(?![-+.eE0-9])|(?:true|false|null)(?![a-zA-Z]))"
    )
    return (
        r"(?:" + scalar + r"|\[" + _WS + r"(?:" + scalar + r"(?:" + _WS + "," + _WS + scalar + r")*+" + _WS + r")?\])"
    )


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


def doomed(text: str, start: int) -> tuple[int, list[dict[str, Any]]] | None:
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
