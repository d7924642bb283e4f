"""The value DAG of the loop-level IR: what one element of a node is, as a function of its index.

A node's ``body`` is an :class:`Expr` over index :class:`~agents.expert.ir.index.Var`s:

* :class:`Load` ``buffer[index]`` (the buffer's element dtype; masked by any enclosing
  :class:`Masked`);
* :class:`Const` a number in a dtype; :class:`IndexValue` an index expression used as a value
  (``arange``, position comparisons of ``triu``);
* :class:`Op` a pointwise op (names and semantics in :mod:`agents.expert.ops`) with its torch
  result dtype; casts are ``Op("to", (x,), dtype)``;
* :class:`Masked` ``where(mask, body, other)`` whose loads are masked by ``mask`` too (``cat``,
  constant padding, scatter regions): lanes outside the mask never touch memory.

Nodes are interned: structurally equal expressions are the same object, so the DAG shares every
common subexpression and hashing/equality are O(1) (a deep softmax body is never re-hashed).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

from agents.expert.ir.index import Affine, Var

_INTERN: weakref.WeakValueDictionary[tuple[Any, ...], Expr] = weakref.WeakValueDictionary()


class Expr:
    __slots__ = ("__weakref__", "dtype")
    dtype: str

    def children(self) -> tuple[Expr, ...]:
        return ()


def _intern(cls: type, key: tuple[Any, ...], init: Callable[[Any], None]) -> Any:
    full = (cls, *key)
    found = _INTERN.get(full)
    if found is not None:
        return found
    obj = object.__new__(cls)
    init(obj)
    _INTERN[full] = obj
    return obj


class Load(Expr):
    __slots__ = ("buffer", "index")
    buffer: str
    index: Affine

    def __new__(cls, buffer: str, index: Affine, dtype: str) -> Load:
        def init(o: Any) -> None:
            o.buffer, o.index, o.dtype = buffer, index, dtype
        return _intern(cls, (buffer, index, dtype), init)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Load({self.buffer}[{self.index}])"


def _const_key(value: Any) -> tuple[str, str]:
    if isinstance(value, float) and math.isnan(value):
        return "float", "nan"
    return type(value).__name__, repr(value)


class Const(Expr):
    __slots__ = ("value",)
    value: float | int | bool

    def __new__(cls, value: float | int | bool, dtype: str) -> Const:
        def init(o: Any) -> None:
            o.value, o.dtype = value, dtype
        return _intern(cls, (*_const_key(value), dtype), init)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Const({self.value!r}:{self.dtype})"


class IndexValue(Expr):
    __slots__ = ("index",)
    index: Affine

    def __new__(cls, index: Affine, dtype: str = "int64") -> IndexValue:
        def init(o: Any) -> None:
            o.index, o.dtype = index, dtype
        return _intern(cls, (index, dtype), init)  # type: ignore[no-any-return]


class Op(Expr):
    __slots__ = ("op", "args", "params")
    op: str
    args: tuple[Expr, ...]
    params: tuple[tuple[str, Any], ...]

    def __new__(cls, op: str, args: tuple[Expr, ...], dtype: str, params: tuple[tuple[str, Any], ...] = ()) -> Op:
        def init(o: Any) -> None:
            o.op, o.args, o.dtype, o.params = op, tuple(args), dtype, tuple(params)
        return _intern(cls, (op, tuple(args), dtype, tuple(params)), init)  # type: ignore[no-any-return]

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def param(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)

    def __repr__(self) -> str:
        return f"{self.op}({', '.join(map(repr, self.args))}):{self.dtype}"


class Masked(Expr):
    __slots__ = ("mask", "body", "other")
    mask: Expr
    body: Expr
    other: float | int | bool

    def __new__(cls, mask: Expr, body: Expr, other: float | int | bool) -> Masked:
        def init(o: Any) -> None:
            o.mask, o.body, o.other, o.dtype = mask, body, other, body.dtype
        return _intern(cls, (mask, body, *_const_key(other)), init)  # type: ignore[no-any-return]

    def children(self) -> tuple[Expr, ...]:
        return self.mask, self.body


class Ref(Expr):
    """The in-kernel value of reduction/scan/matmul node ``name`` at the current lane (the
    scheduler puts it where a fused consumer loads that node's buffer at its own index)."""

    __slots__ = ("name",)
    name: str

    def __new__(cls, name: str, dtype: str) -> Ref:
        def init(o: Any) -> None:
            o.name, o.dtype = name, dtype
        return _intern(cls, (name, dtype), init)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Ref({self.name})"


# -- helpers -----------------------------------------------------------------------------------

def cast(x: Expr, dtype: str) -> Expr:
    if x.dtype == dtype:
        return x
    if isinstance(x, Const):
        return Const(_convert(x.value, dtype), dtype)
    if isinstance(x, IndexValue) and dtype in ("int32", "int64"):  # a position in another integer type
        lo, hi = x.index.bounds()
        if dtype == "int64" or -(1 << 31) <= lo <= hi < (1 << 31):
            return IndexValue(x.index, dtype)
    return Op("to", (x,), dtype)


def _convert(value: Any, dtype: str) -> Any:
    if dtype == "bool":
        return bool(value)
    if dtype.startswith(("int", "uint")):
        return int(value)
    if dtype in ("float16", "bfloat16"):  # a 16-bit value is held rounded to its dtype
        import torch

        return float(torch.tensor(float(value), dtype=getattr(torch, dtype)).item())
    return float(value)


def walk(root: Expr) -> list[Expr]:
    """Every node of the DAG once, children before parents (index-embedded values included)."""
    seen: set[int] = set()
    order: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        e, done = stack.pop()
        if done:
            order.append(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        kids = list(e.children())
        if isinstance(e, (Load, IndexValue)):
            kids += [a.value for a in e.index.indirects()]
        stack.extend((k, False) for k in kids if id(k) not in seen)
    return order


def rebuild(root: Expr, step: Callable[[Expr, Callable[[Expr], Expr]], Expr]) -> Expr:
    """``root`` rebuilt node by node: ``step(node, go)`` returns a node's replacement and calls ``go``
    on the children (or index-embedded values) it keeps. Each node of the DAG is rebuilt once, so
    a value shared by several parents stays one value (which the writer then emits once)."""
    memo: dict[int, Expr] = {}

    def go(e: Expr) -> Expr:
        key = id(e)
        if key not in memo:
            memo[key] = step(e, go)
        return memo[key]

    return go(root)


def substitute(root: Expr, env: dict[Var, Affine], loads: Callable[[Load, Affine], Expr] | None = None) -> Expr:
    """``root`` with every index's vars replaced (``env``); ``loads(load, new_index)`` may replace
    a load (the scheduler inlines in-kernel producers this way)."""
    def step(e: Expr, go: Callable[[Expr], Expr]) -> Expr:
        if isinstance(e, Load):
            index = e.index.subs(env, go)
            return loads(e, index) if loads is not None else Load(e.buffer, index, e.dtype)
        if isinstance(e, IndexValue):
            return IndexValue(e.index.subs(env, go), e.dtype)
        if isinstance(e, Op):
            return Op(e.op, tuple(go(a) for a in e.args), e.dtype, e.params)
        if isinstance(e, Masked):
            return Masked(go(e.mask), go(e.body), e.other)
        return e

    return rebuild(root, step)


def loads_of(root: Expr) -> list[Load]:
    return [e for e in walk(root) if isinstance(e, Load)]


def op_count(root: Expr) -> int:
    return sum(1 for e in walk(root) if isinstance(e, Op))
