"""Weight-only quantised linears: a matmul whose weight is dequantised from integers in the graph.

``x @ (w_int.to(bf16) * scale[:, None]).t()``, ``F.linear(x, w_int.to(x.dtype) * scale)``,
``(w_int - zero) * scale``, a scale applied after the matmul, or no scale at all: the B operand
(through transposes and views) is computed from an integer tensor by casts and elementwise math.
"""

from __future__ import annotations

from typing import Any

from torch import fx

from egg.analysis.models import PatternMatch
from egg.analysis.patterns.forms import ancestors, is_op, numel, region, source, users, value

_MATMUL_B = {"aten.mm": 1, "aten.bmm": 1, "aten.addmm": 2}
_DEQUANT = ("aten.mul", "aten.sub", "aten.add", "aten.div", "aten._to_copy", "aten.view", "aten.permute",
            "aten.expand", "aten.unsqueeze", "aten.bitwise_and", "aten.__rshift__", "aten.cat")


def _integer(node: Any) -> bool:
    val = value(node)
    return val is not None and not val.is_floating_point() and not val.is_complex() and val.dtype.itemsize <= 4


def _dequantised_from(operand: Any) -> tuple[fx.Node, list[fx.Node]] | None:
    """(integer weight, float factors) when ``operand`` is computed from an integer tensor."""
    integer, factors, pending, seen = None, [], [operand], set()
    while pending:
        node = pending.pop()
        if not isinstance(node, fx.Node) or node in seen:
            continue
        seen.add(node)
        if node.op == "placeholder" or not is_op(node, *_DEQUANT):
            if _integer(node) and integer is None:
                integer = node
            elif not _integer(node) and node.op == "placeholder":
                factors.append(node)
            elif not _integer(node):
                return None  # a float computed some other way: not a dequantisation
            continue
        pending.extend(node.all_input_nodes)
    return (integer, factors) if integer is not None else None


def find_weight_only_linear(graph: fx.Graph, names: dict[str, str]) -> list[PatternMatch]:
    found = []
    for node in graph.nodes:
        position = next((p for name, p in _MATMUL_B.items() if is_op(node, name)), None)
        if position is None:
            continue
        dequant = _dequantised_from(node.args[position])
        if dequant is None or _integer(node):
            continue
        weight, factors = dequant
        transposed = any(is_op(n, "aten.permute") for n in ancestors(node.args[position]))
        zero = [f for f in factors if any(is_op(u, "aten.sub") for u in users(f))]
        scales = [f for f in factors if f not in zero]
        params = {
            "weight": names.get(weight.name, weight.name),
            "weight_dtype": str(value(weight).dtype).removeprefix("torch."),
            "scale": names.get(scales[0].name, scales[0].name) if scales else None,
            "zero_point": names.get(zero[0].name, zero[0].name) if zero else None,
            "per_channel": bool(scales) and numel(scales[0]) in shape_dims(weight),
            "packed": any(is_op(n, "aten.bitwise_and", "aten.__rshift__") for n in ancestors(node.args[position])),
            "transposed": transposed,
            "activation": _activation_name(node, position, names),
        }
        nodes = region([weight, *factors], node)
        found.append(PatternMatch(family="weight_only_linear", nodes=[n.name for n in nodes], params=params))
    return found


def shape_dims(node: fx.Node) -> set[int]:
    val = value(node)
    return {int(s) for s in val.shape} if val is not None else set()


def _activation_name(node: fx.Node, position: int, names: dict[str, str]) -> str | None:
    a = source(node.args[position - 1])
    return names.get(a.name, a.name) if isinstance(a, fx.Node) else None

