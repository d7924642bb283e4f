"""Constraints of a tuning space: small arithmetic/boolean expressions over its parameters.

A tuning space may say ``BLOCK_M * BLOCK_K <= 16384`` or ``SPLIT_K == 1 or BLOCK_K <= 64``. We parse
these with :mod:`ast` and evaluate them with our own walker instead of ``eval``: packs come from
users and entry points, and a pack must never be able to run code just by being loaded.

Allowed: parameter names, int/float/str/bool constants, tuples/lists of constants (for ``in``),
``+ - * / // % **``, unary ``- + not``, comparisons (including chained ones, ``in``, ``not in``)
and ``and``/``or``. Nothing else (no calls, attributes, subscripts).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

from egg import pyast

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class ConstraintError(ValueError):
    """A constraint that does not parse or uses something outside the allowed grammar."""


def parse_constraint(expression: str, names: set[str]) -> ast.Expression:
    """Parse ``expression`` and check it only uses the grammar above and the given ``names``."""
    try:
        tree = pyast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ConstraintError(f"cannot parse {expression!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id not in names:
                known = ", ".join(sorted(names)) or "none"
                raise ConstraintError(f"{expression!r} uses unknown name {node.id!r} (parameters: {known})")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, str, bool)):
                raise ConstraintError(f"{expression!r}: constant {node.value!r} is not allowed")
        elif isinstance(node, ast.BinOp) and type(node.op) not in _BINOPS:
            raise ConstraintError(f"{expression!r}: operator {type(node.op).__name__} is not allowed")
        elif isinstance(node, ast.UnaryOp) and type(node.op) not in _UNARY:
            raise ConstraintError(f"{expression!r}: operator {type(node.op).__name__} is not allowed")
        elif isinstance(node, ast.Compare) and any(type(op) not in _COMPARE for op in node.ops):
            raise ConstraintError(f"{expression!r}: comparison is not allowed")
        elif not isinstance(
            node,
            (
                ast.Expression, ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare,
                ast.BoolOp, ast.And, ast.Or, ast.Tuple, ast.List, ast.Load,
                *_BINOPS, *_UNARY, *_COMPARE,
            ),
        ):
            raise ConstraintError(f"{expression!r}: {type(node).__name__} is not allowed")
    return tree


def _eval(node: ast.AST, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_eval(e, env) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env))
    if isinstance(node, ast.BoolOp):
        values = (_eval(v, env) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, env)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise ConstraintError(f"{type(node).__name__} is not allowed")  # parse_constraint prevents this


def evaluate_constraint(expression: str, values: Mapping[str, Any]) -> bool:
    """True when ``values`` (one config of a tuning space) satisfies ``expression``."""
    tree = parse_constraint(expression, set(values))
    try:
        return bool(_eval(tree, values))
    except (ArithmeticError, TypeError) as exc:
        raise ConstraintError(f"{expression!r} with {dict(values)}: {exc}") from None
