"""Rotary position embeddings in the three layouts models use.

* ``half`` (LLaMA/HF ``rotate_half``: dimension i pairs with i + d/2): ``x * cos +
  cat(-x[d/2:], x[:d/2]) * sin``, or the two halves rotated and concatenated directly;
* ``interleaved`` (GPT-J, Meta's reference: i pairs with i + 1): the same with ``x[..., ::2]``
  and ``x[..., 1::2]``, stacked and flattened back;
* ``complex``: ``view_as_real(view_as_complex(x) * freqs)``.
"""

from __future__ import annotations

from typing import Any

from torch import fx

from egg.analysis.models import PatternMatch
from egg.analysis.patterns.forms import arg, is_op, operands, region, same, shape, source, value

Slice = tuple[Any, int, int, int, int]  # base, dim, start, end, step


def _slice_of(node: Any) -> Slice | None:
    node = source(node)
    if not is_op(node, "aten.slice"):
        return None
    base = node.args[0]
    rank = len(shape(base))
    dim = arg(node, 1, "dim", 0) % max(rank, 1)
    size = shape(base)[dim] if rank else 0
    start = arg(node, 2, "start", 0) or 0
    end = min(arg(node, 3, "end", size) or size, size)
    return base, dim, start % size if size and start < 0 else start, end, arg(node, 4, "step", 1) or 1


def _pair(first: Slice | None, second: Slice | None) -> str | None:
    """The layout when ``first``/``second`` are the two rotated halves of one tensor."""
    if first is None or second is None or first[0] is not second[0] or first[1] != second[1]:
        return None
    size = shape(first[0])[first[1]]
    if first[4] == second[4] == 1 and first[2] == 0 and first[3] == second[2] == size // 2 and second[3] == size:
        return "half"
    if first[4] == second[4] == 2 and (first[2], second[2]) == (0, 1):
        return "interleaved"
    return None


def _rotation(node: Any) -> tuple[Any, str] | None:
    """(x, layout) when ``node`` is rotate_half(x) or its interleaved twin."""
    cat = source(node)
    if not (is_op(cat, "aten.cat") and len(cat.args[0]) == 2):
        return None
    negated, kept = (source(p) for p in cat.args[0])
    if not is_op(negated, "aten.neg"):
        return None
    second, first = _slice_of(negated.args[0]), _slice_of(kept)
    layout = _pair(first, second)
    return (first[0], layout) if layout else None


def _factor(product: Any, x: Any) -> Any:
    """The other factor of ``product`` when one factor is x (through casts)."""
    if not is_op(source(product), "aten.mul"):
        return None
    a, b = operands(source(product))
    if same(a, x):
        return b
    return a if same(b, x) else None


def _through(node: fx.Node) -> fx.Node:
    while len(node.users) == 1 and is_op(next(iter(node.users)), "aten._to_copy", "aten.view"):
        node = next(iter(node.users))
    return node


def _params(layout: str, x: Any, cos: Any, sin: Any, names: dict[str, str]) -> dict[str, Any]:
    def named(node: Any) -> str | None:
        found = source(node)
        return names.get(found.name, found.name) if isinstance(found, fx.Node) else None

    val = value(source(x))
    return {
        "layout": layout,
        "rotary_dim": shape(x)[-1] if shape(x) else None,
        "cos": named(cos),
        "sin": named(sin),
        "input_dtype": str(val.dtype).removeprefix("torch.") if val is not None else None,
    }


def _rotated_sum(node: fx.Node, names: dict[str, str]) -> PatternMatch | None:
    """``x * cos + rotate(x) * sin`` in either order."""
    for p, q in (operands(node), operands(node)[::-1]):
        if not is_op(source(q), "aten.mul"):
            continue
        for r, sin in (operands(source(q)), operands(source(q))[::-1]):
            rotation = _rotation(r)
            if rotation is None:
                continue
            x, layout = rotation
            cos = _factor(p, x)
            if cos is not None:
                end = _through(node)
                nodes = region([source(x)], end)
                params = _params(layout, x, cos, sin, names)
                return PatternMatch(family="rotary", nodes=[n.name for n in nodes], params=params)
    return None


def _rotated_pieces(cat: fx.Node, names: dict[str, str]) -> PatternMatch | None:
    """``cat(x1*cos - x2*sin, x2*cos + x1*sin)`` (or stacked, for the interleaved layout)."""
    if len(cat.args[0]) != 2:
        return None
    low, high = (source(p) for p in cat.args[0])
    if not (is_op(low, "aten.sub") and is_op(high, "aten.add")):
        return None
    first = [_slice_of(f) for m in operands(low) if is_op(source(m), "aten.mul") for f in operands(source(m))]
    pieces = [s for s in first if s is not None]
    if len(pieces) != 2:
        return None
    ordered = sorted(pieces, key=lambda s: s[2])
    layout = _pair(ordered[0], ordered[1])
    if layout is None:
        return None
    x = ordered[0][0]
    cos, sin = (_not_a_slice(m) for m in operands(low))
    end = _through(cat)
    nodes = region([source(x)], end)
    return PatternMatch(family="rotary", nodes=[n.name for n in nodes], params=_params(layout, x, cos, sin, names))


def _not_a_slice(product: Any) -> Any:
    """The factor of ``product`` that is not a slice of the rotated tensor (a cos or sin table)."""
    if not is_op(source(product), "aten.mul"):
        return None
    return next((f for f in operands(source(product)) if _slice_of(f) is None), None)


def find_rotary(graph: fx.Graph, names: dict[str, str]) -> list[PatternMatch]:
    found = []
    for node in graph.nodes:
        match = None
        if is_op(node, "aten.add"):
            match = _rotated_sum(node, names)
        elif is_op(node, "aten.cat"):
            match = _rotated_pieces(node, names)
        elif is_op(node, "aten.view_as_real") and is_op(source(node.args[0]), "aten.mul"):
            factors = operands(source(node.args[0]))
            complex_in = next((f for f in factors if is_op(source(f), "aten.view_as_complex")), None)
            if complex_in is not None:
                x = source(complex_in).args[0]
                freqs = next(f for f in factors if f is not complex_in)
                end = _through(node)
                nodes = region([source(x)], end)
                params = _params("complex", x, freqs, freqs, names)
                match = PatternMatch(family="rotary", nodes=[n.name for n in nodes], params=params)
        if match is not None:
            found.append(match)
    return found
