"""A safe evaluator for `calc` expressions: numbers, strings, arithmetic, comparisons and a conditional.

Python's expression grammar, read by `ast.parse` and walked node by node; anything not listed here (names,
attributes, subscripts, calls but `min`/`max`/`abs`/`round`, comprehensions, lambdas) is refused with a
message naming it. Nothing is `eval`ed. Bounds keep a hostile expression cheap: at most `MAX_CHARS`
characters, `MAX_DEPTH` nested nodes, magnitudes up to `MAX_MAGNITUDE`, exponents up to `MAX_EXPONENT`.

`'Arlen Mills' if 1912 < 1931 else 'Dovet Labs'` is how a plan answers "which was founded first": a
comparison picks one of two names the plan wrote.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from ...errors import OrchrmError

MAX_CHARS = 500
MAX_DEPTH = 40
MAX_MAGNITUDE = 1e15
MAX_EXPONENT = 64

Value = int | float | str | bool

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {"min": min, "max": max, "abs": abs, "round": round}


class CalcError(OrchrmError):
    """An expression that does not parse, uses what the evaluator refuses, or fails to compute."""


def evaluate(text: str) -> Value:
    """The value of one expression; a `CalcError` saying why when there is none."""
    source = text.strip()
    if not source:
        raise CalcError("empty expression")
    if len(source) > MAX_CHARS:
        raise CalcError(f"expression longer than {MAX_CHARS} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CalcError(f"not an expression: {_short(source)}") from exc
    return _Walker().value(tree.body, 0)


def formatted(value: Value) -> str:
    """A value as an answer: integral numbers without a decimal point, others to 6 significant digits."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


class _Walker:
    def value(self, node: ast.expr, depth: int) -> Value:
        if depth > MAX_DEPTH:
            raise CalcError(f"expression nested deeper than {MAX_DEPTH}")
        handler = getattr(self, f"_{type(node).__name__}", None)
        if handler is None:
            raise CalcError(f"{type(node).__name__} is not allowed in a calc expression")
        result = handler(node, depth + 1)
        if isinstance(result, int | float) and not isinstance(result, bool):
            if not math.isfinite(result) or abs(result) > MAX_MAGNITUDE:
                raise CalcError(f"a value beyond ±{MAX_MAGNITUDE:g}")
        return result

    def _Constant(self, node: ast.Constant, depth: int) -> Value:
        if isinstance(node.value, bool | int | float | str):
            return node.value
        raise CalcError(f"constant {node.value!r} is not a number or a string")

    def _UnaryOp(self, node: ast.UnaryOp, depth: int) -> Value:
        operand = self._number(node.operand, depth)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        raise CalcError(f"operator {type(node.op).__name__} is not allowed")

    def _BinOp(self, node: ast.BinOp, depth: int) -> Value:
        fn = _BINARY.get(type(node.op))
        if fn is None:
            raise CalcError(f"operator {type(node.op).__name__} is not allowed")
        left, right = self._number(node.left, depth), self._number(node.right, depth)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise CalcError(f"exponent {right:g} beyond ±{MAX_EXPONENT}")
        try:
            return fn(left, right)
        except ZeroDivisionError:
            raise CalcError("division by zero") from None
        except (OverflowError, ValueError) as exc:
            raise CalcError(f"cannot compute: {exc}") from None

    def _Compare(self, node: ast.Compare, depth: int) -> Value:
        left = self.value(node.left, depth)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.value(right_node, depth)
            fn = _COMPARE.get(type(op))
            if fn is None:
                raise CalcError(f"comparison {type(op).__name__} is not allowed")
            if isinstance(left, str) != isinstance(right, str):
                raise CalcError(f"cannot compare {_kind(left)} with {_kind(right)}")
            if not fn(left, right):
                return False
            left = right
        return True

    def _IfExp(self, node: ast.IfExp, depth: int) -> Value:
        test = self.value(node.test, depth)
        if not isinstance(test, bool):
            raise CalcError(f"the condition of an if/else must be a comparison, not {_kind(test)}")
        return self.value(node.body if test else node.orelse, depth)

    def _BoolOp(self, node: ast.BoolOp, depth: int) -> Value:
        values = [self.value(v, depth) for v in node.values]
        if not all(isinstance(v, bool) for v in values):
            raise CalcError("and/or join comparisons only")
        return all(values) if isinstance(node.op, ast.And) else any(values)

    def _Call(self, node: ast.Call, depth: int) -> Value:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in _FUNCTIONS or node.keywords:
            raise CalcError(f"only {', '.join(_FUNCTIONS)} may be called")
        args = [self._number(a, depth) for a in node.args]
        try:
            return _FUNCTIONS[name](*args)
        except (TypeError, ValueError) as exc:
            raise CalcError(f"{name}: {exc}") from None

    def _Name(self, node: ast.Name, depth: int) -> Value:
        raise CalcError(f"unknown name {node.id!r} (an upstream answer that is not a number?)")

    def _number(self, node: ast.expr, depth: int) -> int | float:
        value = self.value(node, depth)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CalcError(f"arithmetic on {_kind(value)}")
        return value


def _kind(value: Value) -> str:
    return f"text {_short(value)!r}" if isinstance(value, str) else type(value).__name__


def _short(text: object, n: int = 60) -> str:
    s = str(text)
    return s if len(s) <= n else s[: n - 3] + "..."
