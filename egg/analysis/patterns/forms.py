"""Normal forms for matching: the usual ways of writing one value, recognised without rewriting.

``x * rsqrt(v)``, ``x / sqrt(v)`` and ``x * pow(v, -0.5)`` are all "x normalised by v";
``mean(x)``, ``sum(x) / n`` and ``sum(x) * (1/n)`` are all "the mean of x"; ``x * x`` and
``pow(x, 2)`` are "x squared"; a value read through casts and reshaping views is still that
value. The graph itself is never changed: matching only looks through these spellings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import torch
from torch import fx

from egg.capture.model import op_name
from egg.capture.opset import category

# Ops that keep a value's elements (possibly re-typed or re-indexed) for matching purposes.
_SAME_VALUE = frozenset(
    "aten._to_copy aten.clone aten.alias aten.view aten.unsqueeze aten.squeeze aten.expand "
    "aten.permute aten.as_strided".split()
)
POINTWISE_OR_VIEW = _SAME_VALUE | frozenset(
    "aten.add aten.sub aten.mul aten.div aten.neg aten.rsqrt aten.sqrt aten.reciprocal aten.exp "
    "aten.log aten.where aten.slice aten.select aten.cat aten.sigmoid aten.tanh aten.erf".split()
)


def packet(node: Any) -> str:
    """``aten.mul`` for a node calling ``aten.mul.Tensor``; "" for anything else."""
    if not isinstance(node, fx.Node) or node.op != "call_function":
        return ""
    return op_name(node.target).rsplit(".", 1)[0] if "." in op_name(node.target) else op_name(node.target)


def is_op(node: Any, *names: str) -> bool:
    return packet(node) in names


def arg(node: fx.Node, index: int, name: str | None = None, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default) if name else default


def source(node: Any) -> Any:
    """The value ``node`` reads through casts, copies and reshaping views."""
    while is_op(node, *_SAME_VALUE):
        node = node.args[0]
    return node


def same(a: Any, b: Any, depth: int = 6) -> bool:
    """Whether a and b hold one value: the same node through casts and views, or the same
    computation done twice (``torch.exp(x) / torch.exp(x).sum()`` computes exp(x) twice)."""
    if not (isinstance(a, fx.Node) and isinstance(b, fx.Node)):
        return False
    a, b = source(a), source(b)
    if a is b:
        return True
    if (
        depth == 0
        or a.op != "call_function"
        or a.target != b.target
        or category(a.target) == "random"
        or len(a.args) != len(b.args)
        or a.kwargs != b.kwargs
    ):
        return False
    return all(_same_argument(x, y, depth - 1) for x, y in zip(a.args, b.args))


def _same_argument(a: Any, b: Any, depth: int) -> bool:
    if isinstance(a, fx.Node) or isinstance(b, fx.Node):
        return same(a, b, depth)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_argument(x, y, depth) for x, y in zip(a, b))
    return a == b


def value(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, fx.Node) else None


def shape(node: Any) -> tuple[int, ...]:
    val = value(node)
    return tuple(int(s) if isinstance(s, int) else 0 for s in val.shape) if isinstance(val, torch.Tensor) else ()


def numel(node: Any) -> int:
    return math.prod(shape(node))


def number(node: Any) -> float | None:
    """A Python number, or a graph constant holding one (``scalar_tensor(v)``, ``full([], v)``)."""
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        return float(node)
    if is_op(node, "aten.scalar_tensor"):
        return number(node.args[0])
    if is_op(node, "aten.full") and not list(node.args[0]):
        return number(node.args[1])
    return None


def close(a: float | None, b: float, rel: float = 1e-4) -> bool:
    return a is not None and math.isclose(a, b, rel_tol=rel)


def operands(node: fx.Node) -> tuple[Any, Any]:
    return (node.args[0], node.args[1]) if len(node.args) > 1 else (node.args[0], None)


def scaled_by(node: Any) -> tuple[Any, float] | None:
    """``x * c``, ``c * x`` or ``x / c`` with a constant c: (x, effective factor)."""
    if is_op(node, "aten.mul"):
        a, b = operands(node)
        if number(b) is not None:
            return a, number(b)
        if number(a) is not None:
            return b, number(a)
    if is_op(node, "aten.div") and number(operands(node)[1]) not in (None, 0.0):
        return node.args[0], 1.0 / number(node.args[1])
    return None


def square_of(node: Any) -> Any:
    """x for ``x * x`` or ``pow(x, 2)`` (the same value on both sides, casts allowed)."""
    node = source(node)
    if is_op(node, "aten.mul") and same(*operands(node)):
        return node.args[0]
    if is_op(node, "aten.pow") and number(arg(node, 1)) == 2.0:
        return node.args[0]
    return None


def reduced_dims(node: fx.Node) -> list[int] | None:
    """The dims a reduction reduces, non-negative; every dim for a full reduction."""
    rank = len(shape(node.args[0]))
    dims = arg(node, 1, "dim")
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return list(range(rank))
    listed = dims if isinstance(dims, (list, tuple)) else [dims]
    return sorted(int(d) % rank for d in listed) if rank else []


def mean_of(node: Any) -> tuple[Any, list[int]] | None:
    """(x, dims) for ``mean(x, dims)``, ``sum(x, dims) / n`` or ``sum(x, dims) * (1/n)``."""
    node = source(node)
    if is_op(node, "aten.mean"):
        return node.args[0], reduced_dims(node) or []
    scaled = scaled_by(node)
    if scaled is not None and is_op(source(scaled[0]), "aten.sum"):
        total = source(scaled[0])
        dims = reduced_dims(total) or []
        count = math.prod(shape(total.args[0])[d] for d in dims)
        if count and close(scaled[1], 1.0 / count):
            return total.args[0], dims
    return None


def plus_constant(node: Any) -> tuple[Any, float]:
    """(v, eps) for ``v + eps``; (node, 0.0) when nothing is added."""
    node = source(node)
    if is_op(node, "aten.add"):
        a, b = operands(node)
        if number(b) is not None:
            return a, number(b)
        if number(a) is not None:
            return b, number(a)
    return node, 0.0


def inverse_sqrt_of(node: Any) -> Any:
    """v for ``rsqrt(v)``, ``1 / sqrt(v)`` (``reciprocal(sqrt(v))``) or ``pow(v, -0.5)``."""
    node = source(node)
    if is_op(node, "aten.rsqrt"):
        return node.args[0]
    if is_op(node, "aten.reciprocal") and is_op(source(node.args[0]), "aten.sqrt"):
        return source(node.args[0]).args[0]
    if is_op(node, "aten.pow") and number(arg(node, 1)) == -0.5:
        return node.args[0]
    return None


def normalised_by(node: Any) -> tuple[Any, Any] | None:
    """(x, v) for ``x * rsqrt(v)`` in any spelling, or ``x / sqrt(v)``."""
    if is_op(node, "aten.mul"):
        a, b = operands(node)
        for x, r in ((a, b), (b, a)):
            v = inverse_sqrt_of(r) if isinstance(r, fx.Node) else None
            if v is not None:
                return x, v
    if is_op(node, "aten.div") and is_op(source(node.args[1]), "aten.sqrt"):
        return node.args[0], source(node.args[1]).args[0]
    return None


def users(node: fx.Node) -> Iterator[fx.Node]:
    """The readers of ``node``, looking through casts and views."""
    for user in node.users:
        if is_op(user, *_SAME_VALUE):
            yield from users(user)
        elif user.op == "call_function":
            yield user


def ancestors(node: Any) -> set[fx.Node]:
    found: set[fx.Node] = set()
    pending = [node] if isinstance(node, fx.Node) else []
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found.add(current)
        pending.extend(n for n in current.all_input_nodes)
    return found


def region(starts: Iterable[Any], end: fx.Node) -> list[fx.Node]:
    """The op nodes that compute ``end`` from ``starts``: descendants of a start, ancestors of end."""
    upstream = ancestors(end)
    begin = {s for s in starts if isinstance(s, fx.Node)}
    inside: set[fx.Node] = set()
    pending = list(begin)
    while pending:
        current = pending.pop()
        for user in current.users:
            if user in upstream and user not in inside:
                inside.add(user)
                pending.append(user)
    nodes = [n for n in end.graph.nodes if n in inside and n.op == "call_function"]
    return nodes
