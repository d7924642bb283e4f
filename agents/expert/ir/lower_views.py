"""Views as index arithmetic (they never cut a fusion).

Reshape, permute, expand, squeeze/unsqueeze, slice (any step), select, split/chunk, flip, roll,
repeat, unfold and ``as_strided`` are index maps: on a stored buffer they give a new layout (a
view the candidate can hand to torch as is) where one exists, and otherwise a loader that
recomputes the source index (``reshape`` of a permuted value: floor-division/modulo atoms).
Piecewise data movement and gathers are in :mod:`agents.expert.ir.lower_indexing`.
"""

from __future__ import annotations

import math
from typing import Any

from torch import fx

from agents.expert.ir.expr import Expr, substitute
from agents.expert.ir.index import Affine, row_major, unravel
from agents.expert.ir.lower import Lowering, meta_layout, register
from agents.expert.ir.nodes import Layout, ScanNode, contiguous_strides
from agents.expert.ir.values import TV, broadcast_to, from_view, with_layout

def _dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def view_strides(shape: tuple[int, ...], stride: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides of ``view(new)`` on a tensor of ``shape``/``stride`` (torch's computeStride), or
    None when no view exists (torch would need a copy)."""
    if math.prod(shape) == 0:
        return contiguous_strides(new)
    if not shape:
        return contiguous_strides(new)
    newstride = [0] * len(new)
    view_d = len(new) - 1
    chunk_base = stride[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and stride[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = stride[d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def _resolve_shape(shape: list[int], numel: int) -> tuple[int, ...]:
    out = [int(s) for s in shape]
    if -1 in out:
        k = out.index(-1)
        rest = math.prod(s for i, s in enumerate(out) if i != k)
        out[k] = numel // rest if rest else 0
    return tuple(out)


@register("aten.view", "aten._unsafe_view", "aten.reshape", "prims.reshape")
def _view(lw: Lowering, node: fx.Node, x: TV, shape: list[int], *rest: Any) -> TV:
    new = _resolve_shape(list(shape), x.numel)
    layout = None
    if x.view is not None:
        st = view_strides(x.shape, x.view.layout.stride, new)
        if st is not None:
            layout = Layout(new, st, x.dtype, x.view.layout.offset)

    def load(idx: list[Affine]) -> Expr:
        return x.at(unravel(row_major(idx, list(new)), list(x.shape)))

    return with_layout(x, layout, load, new)


@register("aten.permute")
def _permute(lw: Lowering, node: fx.Node, x: TV, dims: list[int]) -> TV:
    dims = [_dim(d, x.ndim) for d in dims]
    new = tuple(x.shape[d] for d in dims)
    layout = None
    if x.view is not None:
        lay = x.view.layout
        layout = Layout(new, tuple(lay.stride[d] for d in dims), x.dtype, lay.offset)

    def load(idx: list[Affine]) -> Expr:
        src = [Affine.of(0)] * x.ndim
        for out_pos, d in enumerate(dims):
            src[d] = idx[out_pos]
        return x.at(src)

    return with_layout(x, layout, load, new)


@register("aten.transpose.int")
def _transpose(lw: Lowering, node: fx.Node, x: TV, a: int, b: int) -> TV:
    dims = list(range(x.ndim))
    a, b = _dim(a, x.ndim), _dim(b, x.ndim)
    dims[a], dims[b] = dims[b], dims[a]
    return _permute(lw, node, x, dims)


@register("aten.t.default")
def _t(lw: Lowering, node: fx.Node, x: TV) -> TV:
    return _permute(lw, node, x, list(range(x.ndim))[::-1])


@register("aten.expand", "prims.broadcast_in_dim")
def _expand(lw: Lowering, node: fx.Node, x: TV, shape: list[int], *rest: Any, **kw: Any) -> TV:
    if "broadcast_in_dim" in str(node.target):  # prims.broadcast_in_dim(x, shape, broadcast_dims)
        dims = list(rest[0])
        src_shape = [1] * len(shape)
        for i, d in enumerate(dims):
            src_shape[d] = x.shape[i]
        x = _view(lw, node, x, src_shape)
    new = tuple(int(s) if s != -1 else x.shape[i - (len(shape) - x.ndim)] for i, s in enumerate(shape))
    lead = len(new) - x.ndim
    layout = None
    if x.view is not None:
        lay = x.view.layout
        st = [0] * lead + [0 if (x.shape[i] == 1 and new[lead + i] != 1) else lay.stride[i] for i in range(x.ndim)]
        layout = Layout(new, tuple(st), x.dtype, lay.offset)
    return with_layout(x, layout, broadcast_to(x, new), new)


@register("aten.unsqueeze")
def _unsqueeze(lw: Lowering, node: fx.Node, x: TV, dim: int) -> TV:
    d = _dim(dim, x.ndim + 1)
    new = x.shape[:d] + (1,) + x.shape[d:]
    layout = None
    if x.view is not None:
        lay = x.view.layout
        inner = lay.stride[d] * x.shape[d] if d < x.ndim else 1
        layout = Layout(new, lay.stride[:d] + (inner,) + lay.stride[d:], x.dtype, lay.offset)
    return with_layout(x, layout, lambda idx: x.at(idx[:d] + idx[d + 1:]), new)


@register("aten.squeeze", "prims.squeeze")
def _squeeze(lw: Lowering, node: fx.Node, x: TV, dims: Any = None) -> TV:
    if dims is None:
        drop = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        dims = [dims] if isinstance(dims, int) else list(dims)
        drop = [_dim(d, x.ndim) for d in dims if x.shape[_dim(d, x.ndim)] == 1] if x.ndim else []
    keep = [i for i in range(x.ndim) if i not in drop]
    new = tuple(x.shape[i] for i in keep)
    layout = None
    if x.view is not None:
        lay = x.view.layout
        layout = Layout(new, tuple(lay.stride[i] for i in keep), x.dtype, lay.offset)

    def load(idx: list[Affine]) -> Expr:
        src = [Affine.of(0)] * x.ndim
        for pos, i in enumerate(keep):
            src[i] = idx[pos]
        return x.at(src)

    return with_layout(x, layout, load, new)


def _slice_bounds(size: int, start: Any, end: Any, step: int) -> tuple[int, int]:
    start = 0 if start is None else int(start)
    end = size if end is None else int(end)
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    start, end = max(0, min(start, size)), max(0, min(end, size))
    length = max(0, (end - start + step - 1) // step)
    return start, length


@register("aten.slice.Tensor", "prims.slice")
def _slice(lw: Lowering, node: fx.Node, x: TV, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> TV:
    d = _dim(dim, x.ndim)
    begin, length = _slice_bounds(x.shape[d], start, end, int(step))
    new = x.shape[:d] + (length,) + x.shape[d + 1:]
    layout = None
    if x.view is not None:
        lay = x.view.layout
        st = list(lay.stride)
        st[d] *= int(step)
        layout = Layout(new, tuple(st), x.dtype, lay.offset + begin * lay.stride[d])

    def load(idx: list[Affine]) -> Expr:
        src = list(idx)
        src[d] = idx[d] * int(step) + begin
        return x.at(src)

    return with_layout(x, layout, load, new)


@register("aten.narrow.default")
def _narrow(lw: Lowering, node: fx.Node, x: TV, dim: int, start: int, length: int) -> TV:
    return _slice(lw, node, x, dim, start, start + length, 1)


@register("aten.select.int")
def _select(lw: Lowering, node: fx.Node, x: TV, dim: int, index: int) -> TV:
    d = _dim(dim, x.ndim)
    i = index + x.shape[d] if index < 0 else index
    new = x.shape[:d] + x.shape[d + 1:]
    layout = None
    if x.view is not None:
        lay = x.view.layout
        layout = Layout(new, lay.stride[:d] + lay.stride[d + 1:], x.dtype, lay.offset + i * lay.stride[d])
    return with_layout(x, layout, lambda idx: x.at(idx[:d] + [Affine.of(i)] + idx[d:]), new)


@register("aten.split_with_sizes.default", "aten.split.Tensor")
def _split(lw: Lowering, node: fx.Node, x: TV, sizes: Any, dim: int = 0) -> tuple[TV, ...]:
    d = _dim(dim, x.ndim)
    if isinstance(sizes, int):
        sizes = [min(sizes, x.shape[d] - s) for s in range(0, x.shape[d], sizes)]
    out, start = [], 0
    for s in sizes:
        out.append(_slice(lw, node, x, d, start, start + s, 1))
        start += s
    return tuple(out)


@register("aten.unbind.int")
def _unbind(lw: Lowering, node: fx.Node, x: TV, dim: int = 0) -> tuple[TV, ...]:
    d = _dim(dim, x.ndim)
    return tuple(_select(lw, node, x, d, i) for i in range(x.shape[d]))


@register("aten.as_strided.default")
def _as_strided(lw: Lowering, node: fx.Node, x: TV, size: list[int], stride: list[int], offset: int | None = None) -> TV:
    val = node.args[0].meta.get("val") if isinstance(node.args[0], fx.Node) else None
    base_offset = int(val.storage_offset()) if val is not None else 0
    off = (offset if offset is not None else base_offset) - base_offset
    new, st = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if x.view is not None:
        lay = x.view.layout
        if lay.is_dense():
            # the same storage positions through the buffer's own layout (itself contiguous here)
            if lay.stride == contiguous_strides(lay.shape):
                return from_view_of(x, Layout(new, st, x.dtype, lay.offset + off))
    if val is None or tuple(val.stride()) != contiguous_strides(x.shape):
        return None  # type: ignore[return-value]

    def load(idx: list[Affine]) -> Expr:
        flat = Affine.of(off)
        for i, s in zip(idx, st):
            flat = flat + i * s
        return x.at(unravel(flat, list(x.shape)))

    return TV(new, x.dtype, load)


def from_view_of(x: TV, layout: Layout) -> TV:
    assert x.view is not None
    from agents.expert.ir.nodes import View

    return from_view(View(x.view.buffer, layout))


@register("aten.flip.default")
def _flip(lw: Lowering, node: fx.Node, x: TV, dims: list[int]) -> TV:
    ds = {_dim(d, x.ndim) for d in dims}
    reverse = _reverse_scan(lw, x, ds)
    if reverse is not None:
        return reverse
    layout = None
    if x.view is not None:
        lay = x.view.layout
        st = [-s if i in ds else s for i, s in enumerate(lay.stride)]
        offset = lay.offset + sum((x.shape[i] - 1) * lay.stride[i] for i in ds)
        layout = Layout(x.shape, tuple(st), x.dtype, offset) if all(s >= 0 for s in st) else None

    def load(idx: list[Affine]) -> Expr:
        return x.at([(x.shape[i] - 1) - a if i in ds else a for i, a in enumerate(idx)])

    return with_layout(x, layout, load, x.shape)


def _reverse_scan(lw: Lowering, x: TV, dims: set[int]) -> TV | None:
    """``flip(d)`` of a scan along ``d`` of ``flip(d)``-ed values is the reverse scan of the
    values: one scan node walking the dim backwards (the forward scan becomes dead)."""
    node = lw.nodes.get(x.view.buffer) if x.view is not None else None
    if not isinstance(node, ScanNode) or dims != {node.axis} or x.view.layout != node.layout or node.reverse:
        return None
    n = node.layout.shape[node.axis]
    flipped = {v: (Affine.of(v) if k != node.axis else (n - 1) - Affine.of(v)) for k, v in enumerate(node.vars)}
    assert node.body is not None
    name = lw.fresh(f"{node.name}_reverse")
    scan = ScanNode(name, node.layout, stype=node.stype, axis=node.axis, vars=node.vars,
                    body=substitute(node.body, flipped), reverse=True)
    return lw.add(scan)


@register("aten.roll.default")
def _roll(lw: Lowering, node: fx.Node, x: TV, shifts: list[int], dims: list[int] | None = None) -> TV | None:
    if not dims:
        return None
    pairs = {_dim(d, x.ndim): int(s) % x.shape[_dim(d, x.ndim)] for s, d in zip(shifts, dims)}

    def load(idx: list[Affine]) -> Expr:
        src = [(a + (x.shape[i] - pairs[i])).mod(x.shape[i]) if i in pairs else a for i, a in enumerate(idx)]
        return x.at(src)

    return TV(x.shape, x.dtype, load)


@register("aten.repeat.default")
def _repeat(lw: Lowering, node: fx.Node, x: TV, repeats: list[int]) -> TV:
    out = meta_layout(node)
    lead = len(repeats) - x.ndim

    def load(idx: list[Affine]) -> Expr:
        return x.at([a.mod(x.shape[i]) for i, a in enumerate(idx[lead:])])

    return TV(out.shape, x.dtype, load)


@register("aten.unfold.default")
def _unfold(lw: Lowering, node: fx.Node, x: TV, dim: int, size: int, step: int) -> TV:
    out = meta_layout(node)
    d = _dim(dim, x.ndim)

    def load(idx: list[Affine]) -> Expr:
        src = list(idx[:-1])
        src[d] = idx[d] * step + idx[-1]
        return x.at(src)

    return TV(out.shape, x.dtype, load)
