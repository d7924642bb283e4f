"""Data movement with an index: piecewise loads, gathers, and the one scatter.

``cat``/``stack``, constant padding, ``slice_scatter``/``select_scatter`` are piecewise: masked
loads from each source (lanes of one piece never read another). Gathers (``index``,
``index_select``, ``gather``, ``embedding``) load an index tensor and address the source through
it, negative indices wrapped as torch wraps them. ``index_put`` is the one scatter: a
:class:`~agents.expert.ir.nodes.ScatterNode` writing into a copy of its base (one value put
through a boolean mask is a ``where``).
"""

from __future__ import annotations

from typing import Any

from torch import fx

from agents.expert.ir.expr import Const, Expr, IndexValue, Masked, Op, cast
from agents.expert.ir.index import Affine, Indirect
from agents.expert.ir.lower import Lowering, meta_layout, register
from agents.expert.ir.lower_views import _dim, _slice_bounds
from agents.expert.ir.nodes import Layout, ScatterNode
from agents.expert.ir.values import TV, broadcast_to
from agents.expert.ir.where_loads import where


# -- piecewise ------------------------------------------------------------------------------

def _in_range(i: Affine, lo: int, hi: int) -> Expr | None:
    """``lo <= i < hi`` as a bool Expr (None when the index range makes it always true)."""
    blo, bhi = i.bounds()
    conds: list[Expr] = []
    if blo < lo:
        conds.append(Op("ge", (IndexValue(i), Const(lo, "int64")), "bool"))
    if bhi >= hi:
        conds.append(Op("lt", (IndexValue(i), Const(hi, "int64")), "bool"))
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else Op("logical_and", (conds[0], conds[1]), "bool")


@register("aten.cat.default", "prims.cat")
def _cat(lw: Lowering, node: fx.Node, tensors: list[TV], dim: int = 0) -> TV:
    out = meta_layout(node)
    parts = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    d = _dim(dim, len(out.shape))
    starts, acc = [], 0
    for t in parts:
        starts.append(acc)
        acc += t.shape[d]

    def load(idx: list[Affine]) -> Expr:
        result: Expr | None = None
        for t, start in reversed(list(zip(parts, starts))):
            src = list(idx)
            src[d] = idx[d] - start
            inside = _in_range(idx[d], start, start + t.shape[d])
            value = cast(t.at(src), out.dtype)
            if inside is None:  # the piece covers every lane that reaches it
                result = value
                continue
            masked = Masked(inside, value, 0)  # lanes of other pieces never read this one
            if result is None:
                result = masked
                continue
            # the last piece was tested by its own mask; select only among the others
            first_end = Op("lt", (IndexValue(idx[d]), Const(start + t.shape[d], "int64")), "bool")
            result = Op("where", (first_end, masked, result), out.dtype)
        assert result is not None
        return result

    return TV(out.shape, out.dtype, load)


@register("aten.constant_pad_nd.default")
def _pad(lw: Lowering, node: fx.Node, x: TV, pad: list[int], value: float = 0.0) -> TV:
    out = meta_layout(node)
    pairs = [(pad[2 * k], pad[2 * k + 1]) for k in range(len(pad) // 2)]  # last dim first

    def load(idx: list[Affine]) -> Expr:
        src = list(idx)
        conds: list[Expr] = []
        for k, (lo, _hi) in enumerate(pairs):
            d = x.ndim - 1 - k
            src[d] = idx[d] - lo
            c = _in_range(src[d], 0, x.shape[d])
            if c is not None:
                conds.append(c)
        inner = cast(x.at(src), out.dtype)
        if not conds:
            return inner
        mask = conds[0]
        for c in conds[1:]:
            mask = Op("logical_and", (mask, c), "bool")
        return Masked(mask, inner, value)

    return TV(out.shape, out.dtype, load)


@register("aten.slice_scatter.default")
def _slice_scatter(lw: Lowering, node: fx.Node, base: TV, src: TV, dim: int = 0, start: Any = None,
                   end: Any = None, step: int = 1) -> TV:
    d = _dim(dim, base.ndim)
    begin, length = _slice_bounds(base.shape[d], start, end, int(step))

    def load(idx: list[Affine]) -> Expr:
        i = idx[d]
        rel = i - begin
        conds = [c for c in (_in_range(rel, 0, length * int(step) - int(step) + 1),) if c is not None]
        if int(step) != 1:
            conds.append(Op("eq", (IndexValue(simplify_mod(rel + int(step) * _BIG_STEPS, int(step))),
                                   Const(0, "int64")), "bool"))
        s_idx = list(idx)
        s_idx[d] = (rel + int(step) * _BIG_STEPS).floordiv(int(step)) - _BIG_STEPS if int(step) != 1 else rel
        value = cast(src.at(s_idx), base.dtype)
        if not conds:
            return value
        inside = conds[0] if len(conds) == 1 else Op("logical_and", (conds[0], conds[1]), "bool")
        return Op("where", (inside, Masked(inside, value, 0), base.at(idx)), base.dtype)

    return TV(base.shape, base.dtype, load)


_BIG_STEPS = 1 << 20  # shifts a possibly negative offset up by whole steps before // and %


def simplify_mod(a: Affine, m: int) -> Affine:
    return a.mod(m)


@register("aten.select_scatter.default")
def _select_scatter(lw: Lowering, node: fx.Node, base: TV, src: TV, dim: int, index: int) -> TV:
    d = _dim(dim, base.ndim)
    i0 = index + base.shape[d] if index < 0 else index

    def load(idx: list[Affine]) -> Expr:
        hit = Op("eq", (IndexValue(idx[d]), Const(i0, "int64")), "bool")
        value = cast(src.at(idx[:d] + idx[d + 1:]), base.dtype)
        return Op("where", (hit, Masked(hit, value, 0), base.at(idx)), base.dtype)

    return TV(base.shape, base.dtype, load)


# -- gathers and the scatter ------------------------------------------------------------------

def wrapped_index(value: Expr, size: int) -> Affine:
    """An index tensor's element as an index atom, wrapped like torch's negative indices."""
    v = cast(value, "int64")
    if isinstance(v, IndexValue):  # a position (``arange(n) // 2``): the gather is index arithmetic
        lo, hi = v.index.bounds()
        if 0 <= lo and hi < size:
            return v.index
        if -size <= lo and hi < 0:
            return v.index + size
    wrapped = Op("where", (Op("lt", (v, Const(0, "int64")), "bool"), Op("add", (v, Const(size, "int64")), "int64"), v),
                 "int64")
    return Affine.of(Indirect(wrapped, size))


def _advanced(x: TV, indices: list[TV | None], out_shape: tuple[int, ...]) -> Any:
    """torch's advanced-indexing index map: out index -> source index (None entries are ':')."""
    idx_dims = [i for i, t in enumerate(indices) if t is not None]
    bshape: tuple[int, ...] = ()
    for i in idx_dims:
        t = indices[i]
        assert t is not None
        bshape = _broadcast(bshape, t.shape)
    nb = len(bshape)
    adjacent = idx_dims == list(range(idx_dims[0], idx_dims[-1] + 1))
    first = idx_dims[0] if adjacent else 0
    rest = [d for d in range(x.ndim) if d not in idx_dims]

    def src_index(idx: list[Affine]) -> list[Affine]:
        bidx = idx[first:first + nb]
        plain = idx[:first] + idx[first + nb:]
        src: list[Affine] = [Affine.of(0)] * x.ndim
        for pos, d in enumerate(rest):
            src[d] = plain[pos]
        for d in idx_dims:
            t = indices[d]
            assert t is not None
            src[d] = wrapped_index(broadcast_to(t, bshape)(bidx), x.shape[d])
        return src

    return src_index


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a2, b2 = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(max(x, y) if 1 in (x, y) else x for x, y in zip(a2, b2))


@register("aten.index.Tensor")
def _index(lw: Lowering, node: fx.Node, x: TV, indices: list[TV | None]) -> TV | None:
    if any(t is not None and t.dtype == "bool" for t in indices):
        return None  # boolean masks select a data-dependent number of elements
    out = meta_layout(node)
    indices = list(indices) + [None] * (x.ndim - len(indices))
    src = _advanced(x, indices, out.shape)
    return TV(out.shape, x.dtype, lambda idx: x.at(src(idx)))


@register("aten.index_select.default")
def _index_select(lw: Lowering, node: fx.Node, x: TV, dim: int, index: TV) -> TV:
    out = meta_layout(node)
    d = _dim(dim, x.ndim)

    def load(idx: list[Affine]) -> Expr:
        src = list(idx)
        src[d] = wrapped_index(index.at([idx[d]] if index.ndim else []), x.shape[d])
        return x.at(src)

    return TV(out.shape, x.dtype, load)


@register("aten.embedding.default")
def _embedding(lw: Lowering, node: fx.Node, weight: TV, indices: TV, *rest: Any) -> TV:
    out = meta_layout(node)
    k = indices.ndim
    return TV(out.shape, weight.dtype,
              lambda idx: weight.at([wrapped_index(indices.at(idx[:k]), weight.shape[0]), idx[k]]))


@register("aten.gather.default")
def _gather(lw: Lowering, node: fx.Node, x: TV, dim: int, index: TV, sparse_grad: bool = False) -> TV:
    out = meta_layout(node)
    d = _dim(dim, x.ndim)

    def load(idx: list[Affine]) -> Expr:
        src = list(idx)
        src[d] = wrapped_index(index.at(idx), x.shape[d])
        return x.at(src)

    return TV(out.shape, x.dtype, load)


def _put_one_value(base: TV, mask: TV, values: TV) -> TV | None:
    """``x[mask] = v`` with one value and a mask over x's leading dims: elementwise, a ``where``
    (nanoGPT's ``logits[logits < v[:, [-1]]] = -float('Inf')``). More values fill the True
    positions in order: a compaction, left to torch."""
    if values.numel != 1 or mask.shape != base.shape[:mask.ndim]:
        return None
    fill = cast(values.at([0] * values.ndim), base.dtype)
    return TV(base.shape, base.dtype, lambda idx: where(mask.at(idx[:mask.ndim]), fill, base.at(idx)))


@register("aten.index_put.default")
def _index_put(lw: Lowering, node: fx.Node, base: TV, indices: list[TV | None], values: TV,
               accumulate: bool = False) -> TV | None:
    if not accumulate and len(indices) == 1 and indices[0] is not None and indices[0].dtype == "bool":
        return _put_one_value(base, indices[0], values)
    if accumulate or any(t is not None and t.dtype == "bool" for t in indices):
        return None
    out = meta_layout(node)
    copy = lw.realize(TV(base.shape, base.dtype, base.loader), f"{node.name}_base",
                      Layout.contiguous(base.shape, base.dtype))
    assert copy.view is not None
    indices = list(indices) + [None] * (base.ndim - len(indices))
    idx_dims = [i for i, t in enumerate(indices) if t is not None]
    bshape: tuple[int, ...] = ()
    for i in idx_dims:
        bshape = _broadcast(bshape, indices[i].shape)  # type: ignore[union-attr]
    adjacent = idx_dims == list(range(idx_dims[0], idx_dims[-1] + 1))
    first = idx_dims[0] if adjacent else 0
    rest = [base.shape[d] for d in range(base.ndim) if d not in idx_dims]
    view_shape = tuple(rest[:first]) + bshape + tuple(rest[first:])
    src = _advanced(base, indices, view_shape)
    name = lw.fresh(node.name)
    vs = lw.vars_for(name, view_shape)
    value = cast(broadcast_to(values, view_shape)(list(vs)), base.dtype)
    target_index = copy.view.layout.index(src(list(vs)))
    del out
    scatter = ScatterNode(name, copy.view.layout, target=copy.view.buffer, domain=view_shape, vars=vs,
                          value=value, index=target_index)
    return lw.add(scatter)

