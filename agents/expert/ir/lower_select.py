"""Lowerings of order statistics: the k-th largest (or smallest) value along a dim, one reduction.

Sampling code takes its threshold from ``torch.topk``: Hugging Face's ``TopKLogitsWarper``
compares against ``torch.topk(scores, k)[0][..., -1, None]``, gpt-fast against
``v.select(-1, -1).unsqueeze(-1)``, nanoGPT indexes ``v[:, [-1]]``, others slice ``.values[:, -1:]``; ``torch.kthvalue`` asks for
the k-th smallest directly. Where nothing reads the indices and the values are read only at
position ``k - 1`` of the sorted dim, the op is an order statistic of each row: a reduction node
(``kth_largest``/``kth_smallest``; the template finds it by bisection on order-preserving integer
keys, :mod:`agents.expert.templates.reduction_select`) in place of an extern call that sorts, so
the threshold fuses with the masking and softmax around it. Any other use (the indices, other
columns, ``sorted=False`` with k > 1, fp64 or integer values) keeps torch's call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import fx

from agents.expert.ir.expr import cast
from agents.expert.ir.lower import Lowering, register
from agents.expert.ir.nodes import Layout, ReductionNode, View
from agents.expert.ir.values import TV, from_view

SELECTABLE = frozenset({"float16", "bfloat16", "float32"})  # keys are the fp32 bit patterns
Constant = Callable[[Any], "torch.Tensor | None"]  # a graph argument's value where it is a captured constant


def _constants(lw: Lowering) -> Constant:
    values = {gi.name: gi.value for gi in lw.cg.inputs if gi.kind == "constant"}

    def constant(a: Any) -> torch.Tensor | None:
        v = values.get(a.name) if isinstance(a, fx.Node) and a.op == "placeholder" else None
        return v if isinstance(v, torch.Tensor) and not v.is_floating_point() else None

    return constant


def _norm(i: Any, size: int, default: int) -> int:
    if i is None:
        return default
    i = int(i)
    return min(max(i + size if i < 0 else i, 0), size)


def _reads_position(user: fx.Node, dim: int, rank: int, size: int, pos: int, constant: Constant) -> bool:
    """``user`` reads only position ``pos`` of ``dim``: a select, a slice of length one there, or an
    index by a constant tensor of that position (nanoGPT's ``v[:, [-1]]``)."""
    target = str(user.target)
    args = list(user.args) + [None] * 5
    if target == "aten.index.Tensor":
        indices = list(args[1] or [])
        if len(indices) != dim + 1 or any(i is not None for i in indices[:dim]):
            return False
        value = constant(indices[dim])
        return value is not None and value.numel() > 0 and bool(((value % size) == pos).all())
    if target == "aten.select.int":
        d, index = int(args[1]) % rank, int(args[2])
        return d == dim and (index + size if index < 0 else index) == pos
    if target == "aten.slice.Tensor":
        d = int(args[1] if args[1] is not None else user.kwargs.get("dim", 0)) % rank
        step = args[4] if args[4] is not None else user.kwargs.get("step", 1)
        start, end = _norm(args[2], size, 0), _norm(args[3], size, size)
        return d == dim and step == 1 and start == pos and end == pos + 1
    return False


def _values_only_at(node: fx.Node, dim: int, rank: int, size: int, pos: int, any_use: bool,
                    constant: Constant) -> bool:
    """Every use of ``node``'s (values, indices) pair reads values at ``pos`` of ``dim`` only."""
    uses = 0
    for user in node.users:
        if str(user.target) != "<built-in function getitem>" or not isinstance(user.args[1], int):
            return False
        if user.args[1] != 0:
            if user.users:  # the indices are read: the sort is needed
                return False
            continue
        for reader in user.users:
            uses += 1
            if not (any_use or _reads_position(reader, dim, rank, size, pos, constant)):
                return False
    return uses > 0


def _order_statistic(lw: Lowering, node: fx.Node, x: TV, k: int, dim: int, largest: bool,
                     values_shape: tuple[int, ...]) -> TV:
    """A reduction node of the k-th largest/smallest along ``dim`` (kept as size 1), seen as a
    tensor of ``values_shape`` (the same value at every position of ``dim``: stride 0)."""
    name = lw.fresh(node.name)
    vs = lw.vars_for(name, x.shape)
    keep = tuple(1 if i == dim else s for i, s in enumerate(x.shape))
    reduced = tuple(i == dim for i in range(x.ndim))
    kth = lw.add(ReductionNode(name, Layout.contiguous(keep, x.dtype), rtype="kth_largest" if largest else
                               "kth_smallest", domain=x.shape, reduced=reduced, vars=vs,
                               body=cast(x.at(list(vs)), "float32"), k=k))
    assert kth.view is not None
    strides = tuple(0 if i == dim else st for i, st in enumerate(kth.view.layout.stride))
    return from_view(View(kth.view.buffer, Layout(values_shape, strides, x.dtype)))


def _selectable(x: Any, k: Any, dim: int) -> bool:
    return (isinstance(x, TV) and not x.complex and x.dtype in SELECTABLE and x.ndim > 0 and isinstance(k, int)
            and 1 <= k <= x.shape[dim])


@register("aten.topk.default")
def _topk(lw: Lowering, node: fx.Node, x: TV, k: int, dim: int = -1, largest: bool = True,
          sorted: bool = True) -> Any:  # noqa: A002 - aten's name
    d = dim % x.ndim if x.ndim else 0
    if not _selectable(x, k, d):
        return None
    if not _values_only_at(node, d, x.ndim, k, k - 1, k == 1, _constants(lw)):
        return None
    if k > 1 and not sorted:  # unsorted values: position k - 1 is not the k-th
        return None
    values_shape = tuple(k if i == d else s for i, s in enumerate(x.shape))
    lw.notes.append(f"{node.name}: torch.topk read only at its k-th value: an order statistic ({k} of "
                    f"{x.shape[d]}) computed in a kernel, not a sort")
    return _order_statistic(lw, node, x, k, d, largest, values_shape), None


@register("aten.kthvalue.default")
def _kthvalue(lw: Lowering, node: fx.Node, x: TV, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    d = dim % x.ndim if x.ndim else 0
    if not _selectable(x, k, d) or not _values_only_at(node, d, x.ndim, 1, 0, True, _constants(lw)):
        return None
    kth = _order_statistic(lw, node, x, k, d, False, tuple(1 if i == d else s for i, s in enumerate(x.shape)))
    if keepdim:
        return kth, None
    shape = tuple(s for i, s in enumerate(x.shape) if i != d)
    assert kth.view is not None
    layout = kth.view.layout
    squeezed = Layout(shape, tuple(st for i, st in enumerate(layout.stride) if i != d), layout.dtype)
    return from_view(View(kth.view.buffer, squeezed)), None


__all__ = ["SELECTABLE"]
