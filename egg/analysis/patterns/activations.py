"""GELU in its spellings, and gated MLPs (SwiGLU, GeGLU, ReGLU) around them.

GELU: ``aten.gelu`` (exact or tanh), ``0.5 * x * (1 + erf(x / sqrt(2)))``,
``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))`` and the sigmoid approximation
``x * sigmoid(1.702 * x)``. A gated MLP multiplies an activation of one projection by another
projection of the same input: two matmuls of one tensor, or two halves of one tensor (a fused
gate/up projection, or its output passed in), optionally followed by the down projection.
"""

from __future__ import annotations

import math
from typing import Any

from torch import fx

from egg.analysis.models import PatternMatch
from egg.analysis.patterns.forms import (
    ancestors,
    arg,
    close,
    is_op,
    number,
    operands,
    region,
    same,
    scaled_by,
    source,
    users,
)

_MATMUL = ("aten.mm", "aten.bmm", "aten.addmm")


def _unscaled(node: Any) -> Any:
    """The value under constant factors and casts: ``0.5 * x`` and ``x / 2`` read x."""
    node = source(node)
    while (scaled := scaled_by(node)) is not None:
        node = source(scaled[0])
    return node


def _times_x(start: fx.Node, x: Any, depth: int = 4) -> fx.Node | None:
    """The first product, computed from ``start``, with (a constant multiple of) x as a factor."""
    frontier = [start]
    for _ in range(depth):
        following = []
        for node in frontier:
            for user in users(node):
                if is_op(user, "aten.mul") and any(
                    _unscaled(o) is _unscaled(x) and o is not node and source(o) is not source(node)
                    for o in operands(user)
                ):
                    return _trailing_constants(user)
                if is_op(user, "aten.add", "aten.mul", "aten.sub"):
                    following.append(user)
        frontier = following
    return None


def _trailing_constants(node: fx.Node) -> fx.Node:
    """Extend over ``* 0.5`` written after the product (``x * (1 + erf(...)) * 0.5``)."""
    while len(node.users) == 1 and scaled_by(next(iter(node.users))) is not None:
        node = next(iter(node.users))
    return node


def _gelu(node: fx.Node) -> tuple[str, Any, fx.Node] | None:
    """(approximation, x, end) when ``node`` is where a GELU's nonlinearity is applied."""
    if is_op(node, "aten.gelu"):
        return str(arg(node, 1, "approximate", "none")), node.args[0], node
    if is_op(node, "aten.erf"):
        scaled = scaled_by(node.args[0])
        if scaled is not None and close(scaled[1], 1 / math.sqrt(2)):
            end = _times_x(node, scaled[0])
            return ("none", scaled[0], end) if end is not None else None
    if is_op(node, "aten.tanh"):
        scaled = scaled_by(node.args[0])
        inner = source(scaled[0]) if scaled is not None and close(scaled[1], math.sqrt(2 / math.pi)) else None
        if is_op(inner, "aten.add"):
            terms = sorted((monomial(t) for t in operands(inner)), key=lambda m: m[1])
            (base, power, coefficient), (cubed, three, c3) = terms
            if base is cubed and (power, coefficient, three) == (1, 1.0, 3) and close(c3, 0.044715):
                end = _times_x(node, base)
                return ("tanh", base, end) if end is not None else None
    if is_op(node, "aten.sigmoid"):
        scaled = scaled_by(node.args[0])
        if scaled is not None and close(scaled[1], 1.702, rel=1e-3):
            end = next((u for u in users(node) if is_op(u, "aten.mul") and any(
                _unscaled(o) is _unscaled(scaled[0]) for o in operands(u) if source(o) is not node)), None)
            return ("sigmoid", scaled[0], end) if end is not None else None
    return None


def monomial(node: Any) -> tuple[Any, int, float]:
    """(x, k, c) when ``node`` is c * x**k written with products, constants and pow."""
    if number(node) is not None:
        return None, 0, number(node)
    node = source(node)
    if is_op(node, "aten.mul"):
        (base_a, power_a, c_a), (base_b, power_b, c_b) = (monomial(o) for o in operands(node))
        if base_a is None or base_b is None or base_a is base_b:
            return base_a if base_a is not None else base_b, power_a + power_b, c_a * c_b
    if is_op(node, "aten.pow") and isinstance(arg(node, 1), (int, float)) and float(arg(node, 1)).is_integer():
        base, power, coefficient = monomial(node.args[0])
        exponent = int(arg(node, 1))
        return base, power * exponent, coefficient**exponent
    return node, 1, 1.0


def find_gelu(graph: fx.Graph) -> list[PatternMatch]:
    found = []
    for node in graph.nodes:
        gelu = _gelu(node)
        if gelu is None:
            continue
        approximation, x, end = gelu
        nodes = region([source(x)], end) if end is not node else [node]
        params = {"approximate": approximation}
        found.append(PatternMatch(family="gelu", nodes=[n.name for n in nodes], params=params))
    return found


def _activation(node: fx.Node) -> tuple[str, Any] | None:
    """(name, pre-activation) when ``node`` is the output of silu, gelu or relu."""
    if is_op(node, "aten.mul"):
        for p, q in (operands(node), operands(node)[::-1]):
            if is_op(source(q), "aten.sigmoid") and same(p, source(q).args[0]):
                return "silu", p
    if is_op(node, "aten.relu"):
        return "relu", node.args[0]
    gelu = _gelu(node)
    if gelu is not None and gelu[2] is node:
        return "gelu", gelu[1]
    return None


def _projection_input(node: Any) -> Any:
    """The A operand's value of the matmul that produced ``node`` (through views), or None."""
    node = source(node)
    if is_op(node, "aten.mm", "aten.bmm"):
        return source(node.args[0])
    if is_op(node, "aten.addmm"):
        return source(node.args[1])
    return None


def _halves(a: Any, b: Any) -> Any:
    """The tensor two slices of one dim cut into pieces: the fused gate/up layout."""
    a, b = source(a), source(b)
    if is_op(a, "aten.slice") and is_op(b, "aten.slice") and a.args[0] is b.args[0] and a.args[1] == b.args[1]:
        return a.args[0]
    return None


def find_gated_mlp(graph: fx.Graph, gelu_ends: set[fx.Node]) -> list[PatternMatch]:
    found = []
    for node in graph.nodes:
        act = _activation(node)
        if act is None and node in gelu_ends:
            act = ("gelu", _gelu_input(node))
        if act is None:
            continue
        name, pre = act
        for product in (u for u in users(node) if is_op(u, "aten.mul")):
            others = [o for o in operands(product) if isinstance(o, fx.Node) and source(o) is not source(node)]
            up = others[0] if others else None
            if up is None:
                continue
            shared = _projection_input(pre)
            if shared is not None and shared is _projection_input(up):
                start, layout = shared, "matmuls"
            elif (fused := _halves(pre, up)) is not None:
                start, layout = fused, "halves"
            else:
                continue
            end = next((u for u in users(product) if _reads_as_a(u, product)), None)
            last = end if end is not None else product
            params = {"activation": name, "projections": layout, "down_projection": end is not None}
            nodes = [n.name for n in region([start], last)]
            found.append(PatternMatch(family="gated_mlp", nodes=nodes, params=params))
    return found


def _reads_as_a(node: fx.Node, value: fx.Node) -> bool:
    """Whether matmul ``node`` multiplies ``value`` (its A operand): a down projection."""
    if is_op(node, "aten.mm", "aten.bmm"):
        return source(node.args[0]) is value
    return is_op(node, "aten.addmm") and source(node.args[1]) is value


def _gelu_input(node: fx.Node) -> Any:
    for candidate in ancestors(node):
        gelu = _gelu(candidate) if candidate.op == "call_function" else None
        if gelu is not None and gelu[2] is node:
            return gelu[1]
    return None
