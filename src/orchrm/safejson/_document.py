"""One whole JSON document read safely: `loads`, `read` and `bounded_int`, the rules they enforce and the limits.

Pre-checks at regex speed (size, raw surrogates, long numbers, depth on a skeleton with strings blanked out),
then `json.loads` at C speed with non-finite numbers refused and escaped surrogates looked for after decoding.
The names without an underscore are shared with the prose scanner (_scan.py, _shortcuts.py).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from ..errors import OrchrmError

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
STRING = re.compile(r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
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


def check_size(text: str, limits: Limits) -> None:
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


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


def no_constant(name: str) -> Any:
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
    check_size(text, limits)
    _check_text(text)  # raw surrogates; escaped ones are looked for after decoding
    # The pre-checks read the text with strings blanked out. Where the text is not JSON they may misjudge
    # what follows the first error, which only changes which rule is named for text json refuses anyway.
    skeleton = STRING.sub('""', text)
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
        value = json.loads(text, parse_float=finite_float, parse_constant=no_constant)
    except _NonFinite as exc:
        raise UnsafeJSONError("non_finite", f"{exc} is not a finite number") from None
    except json.JSONDecodeError as exc:
        raise UnsafeJSONError(
            "syntax", f"{exc.msg} at line {exc.lineno} column {exc.colno}", position=exc.pos
        ) from None
    except RecursionError:  # not reachable with the depth check; kept so no input can escape as a crash
        raise UnsafeJSONError("depth", "nested too deeply") from None
    if ESCAPED_SURROGATE.search(text):
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
