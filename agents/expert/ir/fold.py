"""Constant folding of tests that became constant after an index substitution.

Lowering keeps position tests symbolic: ``torch.stack([low, high], -1).reshape(n, k)`` reads
``where(k % 2 < 1, Masked(k % 2 < 1, low[k // 2]), Masked(k % 2 >= 1, high[k // 2]))``. Where a
template substitutes ``k = 2 * k2 + r`` for a fixed phase ``r`` (the matmul's K phases), the index
algebra reduces ``k % 2`` to the constant ``r``, and this pass finishes the job: the comparison is
a constant, the ``where`` picks its branch, the ``Masked`` piece is its body (or its ``other``),
so the loads of both phases are the same unmasked load, which the writer emits once.

Only integer and boolean arithmetic is evaluated (Python's integers are exact; a float constant is
left to the kernel, which rounds as torch does). Everything else is rebuilt with folded children.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from agents.expert.ir.expr import Const, Expr, IndexValue, Load, Masked, Op, cast, rebuild
from agents.expert.ir.index import Affine

_EXACT = ("bool", "int8", "int16", "int32", "int64", "uint8")

_FOLD: dict[str, Callable[..., Any]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge, "add": operator.add, "sub": operator.sub, "mul": operator.mul, "neg": operator.neg,
    "logical_and": lambda a, b: bool(a) and bool(b), "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_xor": lambda a, b: bool(a) != bool(b), "logical_not": lambda a: not a,
    "bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
}


def _constant(e: Expr) -> Const | None:
    if isinstance(e, Const):
        return e
    if isinstance(e, IndexValue) and e.index.is_const:
        return Const(e.index.const, e.dtype)
    return None


def _truth(e: Expr) -> bool | None:
    c = _constant(e)
    return None if c is None else bool(c.value)


def _wrap(value: Any, dtype: str) -> Const | None:
    """``value`` as a constant of ``dtype``, or None where the dtype would wrap or round it."""
    if dtype == "bool":
        return Const(bool(value), "bool")
    if dtype in _EXACT and isinstance(value, int):
        bits = int(dtype.removeprefix("uint").removeprefix("int"))
        lo, hi = (0, (1 << bits) - 1) if dtype.startswith("uint") else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        return Const(int(value), dtype) if lo <= value <= hi else None
    return None


def _fold_op(e: Op, args: tuple[Expr, ...]) -> Expr:
    if e.op == "where":
        pick = _truth(args[0])
        if pick is not None:
            return cast(args[1] if pick else args[2], e.dtype)
    if e.op in ("logical_and", "logical_or") and e.dtype == "bool":
        for i, a in enumerate(args):
            truth = _truth(a)
            if truth is None:
                continue
            absorbing = truth is (e.op == "logical_or")  # True | x, False & x
            return Const(truth, "bool") if absorbing else cast(args[1 - i], "bool")
    if e.op == "to" and len(args) == 1:
        c = _constant(args[0])
        if c is not None and c.dtype in _EXACT:
            folded = _wrap(int(c.value), e.dtype) if e.dtype != "bool" else Const(bool(c.value), "bool")
            if folded is not None:
                return folded
    rule = _FOLD.get(e.op)
    consts = [_constant(a) for a in args]
    if rule is not None and e.dtype in _EXACT and all(c is not None and c.dtype in _EXACT for c in consts):
        folded = _wrap(rule(*(int(c.value) if c.dtype != "bool" else bool(c.value) for c in consts if c)), e.dtype)
        if folded is not None:
            return folded
    return Op(e.op, args, e.dtype, e.params)


def fold(root: Expr) -> Expr:
    """``root`` with constant tests evaluated, decided ``where``s and ``Masked`` pieces resolved."""
    def step(e: Expr, go: Callable[[Expr], Expr]) -> Expr:
        if isinstance(e, Op):
            return _fold_op(e, tuple(go(a) for a in e.args))
        if isinstance(e, Masked):
            mask, body = go(e.mask), go(e.body)
            truth = _truth(mask)
            return body if truth else Const(e.other, e.dtype) if truth is False else Masked(mask, body, e.other)
        if isinstance(e, (Load, IndexValue)) and e.index.indirects():
            index = e.index.subs({}, go)
            return Load(e.buffer, index, e.dtype) if isinstance(e, Load) else IndexValue(index, e.dtype)
        return e

    return rebuild(root, step)


def _position(e: Expr) -> Affine | None:
    if isinstance(e, IndexValue):
        return e.index
    if isinstance(e, Const) and e.dtype in _EXACT and e.dtype != "bool":
        return Affine.of(int(e.value))
    return None


def _fits(a: Affine, dtype: str) -> bool:
    lo, hi = a.bounds()
    return _wrap(lo, dtype) is not None and _wrap(hi, dtype) is not None


def index_arith(e: Op) -> Expr:
    """``e`` as an index value where it is integer arithmetic on positions (``arange(n) // 2``,
    ``k % 8``, ``4 * (k % 8)``): the index algebra then simplifies through it, as it does through
    views (a gather at ``arange(k) // 2`` is a strided read; ``k % 2`` a digit a K phase fixes).
    Floor division and remainder only by a positive constant of a provably non-negative position
    (where floor, truncation and Python's ``%`` agree with the index atoms)."""
    if e.dtype not in _EXACT or e.dtype == "bool" or e.op not in ("add", "sub", "mul", "neg", "div_mode", "remainder"):
        return e
    args = [_position(a) for a in e.args]
    if any(a is None for a in args) or not any(isinstance(a, IndexValue) for a in e.args):
        return e
    out: Affine | None = None
    if e.op == "add":
        out = args[0] + args[1]
    elif e.op == "sub":
        out = args[0] - args[1]
    elif e.op == "neg":
        out = args[0] * -1
    elif e.op == "mul" and (args[0].is_const or args[1].is_const):
        k, other = (args[0], args[1]) if args[0].is_const else (args[1], args[0])
        out = other * k.const
    elif e.op in ("div_mode", "remainder") and args[1].is_const and args[1].const > 0 and args[0].bounds()[0] >= 0:
        if e.op == "remainder":
            out = args[0].mod(args[1].const)
        elif e.param("rounding_mode") in ("floor", "trunc"):
            out = args[0].floordiv(args[1].const)
    return IndexValue(out, e.dtype) if out is not None and _fits(out, e.dtype) else e
