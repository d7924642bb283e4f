"""Lowerings of reductions, scans and windowed reductions (pools) into IR nodes.

A reduction keeps the input's dim order in its domain and marks the reduced dims, so any set of
axes is one node. Accumulation is fp32 for 16-bit and fp32 inputs (fp64 for fp64, int64 for ints
and bools, as torch's ``sum`` promotes); ``mean`` is a sum then one division, rounded once;
``var``/``std`` are Welford (mean and M2) nodes. A reduction with few output rows and a long
reduced extent is *split* (Inductor's split reduction): stage 1 reduces chunks into partials
(one row per chunk, so every SM gets work), stage 2 combines them in a fixed order (no atomics,
deterministic). Which reductions split is the scheduler's call (:func:`agents.expert.schedule.
split_candidates`: a kernel of few long rows whose reductions do not feed each other, with the
chunks per row from the packs' ``split-reduction-*`` constants), passed back as ``LowerOptions.split``.
Pools (windowed reductions) are in :mod:`agents.expert.ir.lower_windows`.
"""

from __future__ import annotations

import math
from typing import Any

from torch import fx

from agents.expert.ir import dtypes
from agents.expert.ir.expr import Const, Expr, IndexValue, Load, Masked, Op, cast, substitute, walk
from agents.expert.ir.index import Affine, Var, unravel
from agents.expert.ir.lower import Lowering, meta_layout, register
from agents.expert.ir.nodes import Layout, ReductionNode, ScanNode
from agents.expert.ir.values import TV

SPLITTABLE = frozenset({"sum", "max", "min", "any", "all", "welford"})


def _dims(dims: Any, rank: int) -> list[int]:
    if dims is None or dims == [] or dims == ():
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d + rank if d < 0 else d for d in dims}) if rank else []


def acc_dtype(rtype: str, dtype: str) -> str:
    if rtype in ("any", "all"):
        return "bool"
    if dtype == "bool" or dtypes.is_int(dtype):
        return "int64" if rtype in ("sum", "prod") else dtype
    return "float64" if dtype == "float64" else "float32"


def _out_shape(shape: tuple[int, ...], dims: list[int], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def reduce(lw: Lowering, hint: str, x: TV, dims: list[int], keepdim: bool, rtype: str,
           out_dtype: str | None = None) -> TV | list[TV]:
    """A reduction node of ``x`` over ``dims`` (welford: ``[mean, m2]``)."""
    acc = acc_dtype(rtype if rtype != "argmax" and rtype != "argmin" else "max", x.dtype)
    shape = _out_shape(x.shape, dims, keepdim)
    name = lw.fresh(hint)
    vs = lw.vars_for(name, x.shape)
    body = cast(x.at(list(vs)), acc)
    reduced = tuple(i in dims for i in range(x.ndim))
    splits = dict(lw.options.split).get(name, 1)
    if splits > 1 and rtype in SPLITTABLE:
        return _split(lw, name, x.shape, reduced, vs, body, rtype, shape, out_dtype or acc, splits)
    if rtype == "welford":
        outs = []
        for part in ("welford_mean", "welford_m2"):
            n = name if part == "welford_mean" else lw.fresh(f"{name}_m2")
            node = ReductionNode(n, Layout.contiguous(shape, acc), rtype=part, domain=x.shape, reduced=reduced,
                                 vars=vs, body=body)
            outs.append(lw.add(node))
        return outs
    dtype = out_dtype or (acc if rtype not in ("argmax", "argmin") else "int64")
    if rtype in ("max", "min"):
        dtype = out_dtype or x.dtype
    node = ReductionNode(name, Layout.contiguous(shape, dtype), rtype=rtype, domain=x.shape, reduced=reduced,
                         vars=vs, body=body)
    return lw.add(node)


def reads_along_kept(body: Expr, vs: tuple[Var, ...], reduced: tuple[bool, ...]) -> bool:
    """Whether the reduction's loads walk a kept dim with stride 1 and no reduced one (a reduction
    over dim 0 of a row-major matrix): its kernel is column-major (the reduction template's
    ``column_major``), and a split of it keeps the chunks outside the kept dims."""
    kept = {v for v, r in zip(vs, reduced) if not r}
    unit = {a for e in walk(body) if isinstance(e, Load) for a, c in e.index.terms if c == 1}
    return bool(unit & kept) and not unit & (set(vs) - kept)


def _split(lw: Lowering, name: str, shape: tuple[int, ...], reduced: tuple[bool, ...], vs: tuple[Var, ...],
           body: Expr, rtype: str, out_shape: tuple[int, ...], out_dtype: str, splits: int) -> TV | list[TV]:
    """Stage 1 over (kept dims, chunk index, chunk), stage 2 over the chunk index; for a reduction
    that reads along a kept dim (:func:`reads_along_kept`) the chunk index goes first instead, so
    the partials are (chunks, kept dims) and a stage-1 program's lanes still walk contiguous
    outputs (with the chunk index last, neighbouring lanes were a chunk apart in memory)."""
    xsizes = [s for s, r in zip(shape, reduced) if not r]
    rsizes = [s for s, r in zip(shape, reduced) if r]
    rnumel = math.prod(rsizes)
    chunk = -(-rnumel // splits)
    part = lw.fresh(f"{name}_part")
    outer = reads_along_kept(body, vs, reduced)
    pvs = lw.vars_for(part, [splits, *xsizes, chunk] if outer else [*xsizes, splits, chunk])
    which, kept_vars = (pvs[0], pvs[1:-1]) if outer else (pvs[-2], pvs[:-2])
    flat = Affine.of(which) * chunk + pvs[-1]
    r_idx = unravel(flat, rsizes)
    env: dict[Var, Affine] = {}
    xi = ri = 0
    for v, r in zip(vs, reduced):
        if r:
            env[v] = r_idx[ri]
            ri += 1
        else:
            env[v] = Affine.of(kept_vars[xi])
            xi += 1
    mask = Op("lt", (IndexValue(flat), Const(rnumel, "int64")), "bool") if splits * chunk != rnumel else None
    pbody = substitute(body, env)
    if mask is not None:
        pbody = Masked(mask, pbody, _identity(rtype, body.dtype))
    domain = (splits, *xsizes, chunk) if outer else (*xsizes, splits, chunk)
    pred = (*([False] * (len(xsizes) + 1)), True)
    pshape = (splits, *xsizes) if outer else (*xsizes, splits)
    acc = body.dtype

    def stage1(n: str, rt: str, b: Expr) -> str:
        lw.add(ReductionNode(n, Layout.contiguous(pshape, acc if rt != "count" else "float32"),
                             rtype=rt if rt != "count" else "sum", domain=domain, reduced=pred, vars=pvs, body=b,
                             mask=mask))
        return n

    qvs = lw.vars_for(lw.fresh(f"{name}_q"), pshape)
    qdomain, qred = pshape, ((True, *([False] * len(xsizes))) if outer else (*([False] * len(xsizes)), True))

    def partial(n: str, dtype: str) -> Expr:
        return Load(n, Layout.contiguous(pshape, dtype).index(list(qvs)), dtype)

    if rtype != "welford":
        p = stage1(part, rtype, pbody)
        node = ReductionNode(name, Layout.contiguous(out_shape, out_dtype), rtype=rtype, domain=qdomain,
                             reduced=qred, vars=qvs, body=partial(p, acc))
        return lw.add(node)
    # Welford: per-chunk (mean, m2, count); stage 2 merges them with sums (Chan's formula)
    pm = stage1(part, "welford_mean", pbody)
    pm2 = stage1(lw.fresh(f"{name}_part_m2"), "welford_m2", pbody)
    one = Const(1.0, "float32")
    count_body = Masked(mask, one, 0.0) if mask is not None else one
    pc = stage1(lw.fresh(f"{name}_part_n"), "count", count_body)
    cnt, mean_p, m2_p = partial(pc, "float32"), partial(pm, acc), partial(pm2, acc)
    total = lw.fresh(f"{name}_n")
    lw.add(ReductionNode(total, Layout.contiguous(out_shape, "float32"), rtype="sum", domain=qdomain, reduced=qred,
                         vars=qvs, body=cnt))
    weighted = lw.fresh(f"{name}_wsum")
    lw.add(ReductionNode(weighted, Layout.contiguous(out_shape, acc), rtype="sum", domain=qdomain, reduced=qred,
                         vars=qvs, body=Op("mul", (cast(cnt, acc), mean_p), acc)))
    out_layout = Layout.contiguous(out_shape, acc)
    xi_vars = [v for v, r in zip(qvs, qred) if not r]
    out_idx = _match(out_shape, xsizes, [Affine.of(v) for v in xi_vars])
    n_row = Load(total, out_layout.index(out_idx), "float32")
    mean = Op("div", (Load(weighted, out_layout.index(out_idx), acc), cast(n_row, acc)), acc)
    dev = Op("sub", (mean_p, mean), acc)
    m2_body = Op("add", (m2_p, Op("mul", (cast(cnt, acc), Op("mul", (dev, dev), acc)), acc)), acc)
    m2_name = lw.fresh(f"{name}_m2")
    m2 = lw.add(ReductionNode(m2_name, out_layout, rtype="sum", domain=qdomain, reduced=qred, vars=qvs, body=m2_body))
    mean_tv = TV(out_shape, acc, lambda idx: Op("div", (Load(weighted, out_layout.index(idx), acc),
                                                        cast(Load(total, out_layout.index(idx), "float32"), acc)), acc))
    return [mean_tv, m2]


def _match(out_shape: tuple[int, ...], sizes: list[int], idx: list[Affine]) -> list[Affine]:
    from agents.expert.ir.nodes import match_dims

    return match_dims(list(out_shape), sizes, idx)


def _identity(rtype: str, dtype: str) -> Any:
    if rtype in ("max", "argmax"):
        return float("-inf") if dtypes.is_float(dtype) else -(1 << 62) if dtype != "bool" else False
    if rtype in ("min", "argmin"):
        return float("inf") if dtypes.is_float(dtype) else (1 << 62) if dtype != "bool" else True
    if rtype == "prod" or rtype == "all":
        return 1
    return 0


# -- reductions -------------------------------------------------------------------------------

@register("aten.sum.dim_IntList", "aten.sum.default", "prims.sum.default")
def _sum(lw: Lowering, node: fx.Node, x: TV, dims: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    out = meta_layout(node)
    return _finish(reduce(lw, node.name, x, _dims(dims, x.ndim), keepdim, "sum", out.dtype), out)


def _finish(tv: Any, out: Layout) -> TV:
    assert isinstance(tv, TV)
    if tv.dtype == out.dtype:
        return tv
    return TV(tv.shape, out.dtype, lambda idx: cast(tv.at(idx), out.dtype))


@register("aten.mean.dim", "aten.mean.default")
def _mean(lw: Lowering, node: fx.Node, x: TV, dims: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    out = meta_layout(node)
    ds = _dims(dims, x.ndim)
    if not dtypes.is_float(out.dtype):
        return None
    acc = acc_dtype("sum", out.dtype)
    total = reduce(lw, node.name, x, ds, keepdim, "sum", acc)
    assert isinstance(total, TV)
    n = math.prod(x.shape[d] for d in ds)
    return TV(out.shape, out.dtype, lambda idx: cast(Op("div", (total.at(idx), Const(float(n), acc)), acc), out.dtype))


@register("aten.amax.default", "aten.amin.default", "prims.amax.default", "prims.amin.default")
def _amax(lw: Lowering, node: fx.Node, x: TV, dims: Any = None, keepdim: bool = False) -> Any:
    rtype = "max" if "amax" in str(node.target) else "min"
    return reduce(lw, node.name, x, _dims(dims, x.ndim), keepdim, rtype, x.dtype)


@register("aten.max.default", "aten.min.default")
def _max_all(lw: Lowering, node: fx.Node, x: TV) -> Any:
    return reduce(lw, node.name, x, _dims(None, x.ndim), False, "max" if "max" in str(node.target) else "min", x.dtype)


@register("aten.max.dim", "aten.min.dim")
def _max_dim(lw: Lowering, node: fx.Node, x: TV, dim: int, keepdim: bool = False) -> Any:
    big = "max" in str(node.target)
    ds = _dims(dim, x.ndim)
    values = reduce(lw, node.name, x, ds, keepdim, "max" if big else "min", x.dtype)
    indices = reduce(lw, f"{node.name}_idx", x, ds, keepdim, "argmax" if big else "argmin", "int64")
    return values, indices


@register("aten.argmax.default", "aten.argmin.default")
def _argmax(lw: Lowering, node: fx.Node, x: TV, dim: Any = None, keepdim: bool = False) -> Any:
    rtype = "argmax" if "argmax" in str(node.target) else "argmin"
    if dim is None:
        flat = TV((x.numel,), x.dtype, lambda idx: x.at(unravel(idx[0], list(x.shape))))
        out = reduce(lw, node.name, flat, [0], False, rtype, "int64")
        if keepdim:
            assert isinstance(out, TV)
            return TV((1,) * x.ndim, "int64", lambda idx: out.at([]))
        return out
    return reduce(lw, node.name, x, _dims(dim, x.ndim), keepdim, rtype, "int64")


@register("aten.any.dim", "aten.any.dims", "aten.any.default", "aten.all.dim", "aten.all.dims", "aten.all.default")
def _any(lw: Lowering, node: fx.Node, x: TV, dim: Any = None, keepdim: bool = False) -> Any:
    rtype = "any" if "any" in str(node.target) else "all"
    return reduce(lw, node.name, x, _dims(dim, x.ndim), keepdim, rtype, "bool")


@register("aten.prod.dim_int", "aten.prod.default")
def _prod(lw: Lowering, node: fx.Node, x: TV, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    out = meta_layout(node)
    return _finish(reduce(lw, node.name, x, _dims(dim, x.ndim), keepdim, "prod", out.dtype), out)


def _var_parts(lw: Lowering, node: fx.Node, x: TV, dims: Any, keepdim: bool) -> tuple[TV, TV, int]:
    ds = _dims(dims, x.ndim)
    if not dtypes.is_float(x.dtype):
        raise ValueError("var of an integer tensor")
    mean, m2 = reduce(lw, node.name, x, ds, keepdim, "welford")  # type: ignore[misc]
    return mean, m2, math.prod(x.shape[d] for d in ds)


def _variance(m2: TV, n: int, correction: float, out: str) -> TV:
    denom = max(0.0, n - correction)
    acc = m2.dtype
    return TV(m2.shape, out, lambda idx: cast(Op("div", (m2.at(idx), Const(denom, acc)), acc), out))


@register("aten.var.correction", "aten.var.dim", "prims.var.default")
def _var(lw: Lowering, node: fx.Node, x: TV, dims: Any = None, *rest: Any, correction: Any = None,
         keepdim: bool = False, unbiased: Any = None) -> Any:
    if "prims" in str(node.target):
        correction = rest[0] if rest else correction
    elif rest:  # var.dim(x, dims, unbiased, keepdim)
        unbiased = rest[0]
        keepdim = rest[1] if len(rest) > 1 else keepdim
    corr = 1.0 if correction is None and unbiased in (None, True) else 0.0 if correction is None else float(correction)
    out = meta_layout(node)
    _, m2, n = _var_parts(lw, node, x, dims, keepdim)
    return _variance(m2, n, corr, out.dtype)


@register("aten.var_mean.correction")
def _var_mean(lw: Lowering, node: fx.Node, x: TV, dims: Any = None, *, correction: Any = None,
              keepdim: bool = False) -> Any:
    corr = 1.0 if correction is None else float(correction)
    mean, m2, n = _var_parts(lw, node, x, dims, keepdim)
    out = x.dtype
    mean_out = TV(mean.shape, out, lambda idx: cast(mean.at(idx), out))
    return _variance(m2, n, corr, out), mean_out


@register("aten.std.correction")
def _std(lw: Lowering, node: fx.Node, x: TV, dims: Any = None, *, correction: Any = None, keepdim: bool = False) -> Any:
    var = _var(lw, node, x, dims, correction=correction, keepdim=keepdim)
    acc = acc_dtype("sum", x.dtype)
    return TV(var.shape, var.dtype, lambda idx: cast(Op("sqrt", (cast(var.at(idx), acc),), acc), var.dtype))


@register("aten.linalg_vector_norm.default")
def _vector_norm(lw: Lowering, node: fx.Node, x: TV, ord: Any = 2, dim: Any = None, keepdim: bool = False,
                 *, dtype: Any = None) -> Any:  # noqa: A002
    out = meta_layout(node)
    acc = acc_dtype("sum", x.dtype)
    p = float(ord)
    ds = _dims(dim, x.ndim)

    def mapped(f: Any) -> TV:
        return TV(x.shape, acc, lambda idx: f(cast(x.at(idx), acc)))

    absx = mapped(lambda v: Op("abs", (v,), acc))
    if math.isinf(p):
        r = reduce(lw, node.name, absx, ds, keepdim, "max" if p > 0 else "min", acc)
        return _finish(r, out)
    if p == 0:
        nz = TV(x.shape, acc, lambda idx: cast(Op("ne", (cast(x.at(idx), acc), Const(0.0, acc)), "bool"), acc))
        return _finish(reduce(lw, node.name, nz, ds, keepdim, "sum", acc), out)
    if p == 1:
        return _finish(reduce(lw, node.name, absx, ds, keepdim, "sum", acc), out)
    powx = mapped(lambda v: Op("mul", (v, v), acc)) if p == 2 else \
        mapped(lambda v: Op("pow_scalar", (Op("abs", (v,), acc),), acc, (("exponent", p),)))
    total = reduce(lw, node.name, powx, ds, keepdim, "sum", acc)
    assert isinstance(total, TV)
    if p == 2:
        return TV(total.shape, out.dtype, lambda idx: cast(Op("sqrt", (total.at(idx),), acc), out.dtype))
    return TV(total.shape, out.dtype, lambda idx: cast(Op("pow_scalar", (total.at(idx),), acc,
                                                          (("exponent", 1.0 / p),)), out.dtype))


# -- scans ------------------------------------------------------------------------------------

@register("aten.cumsum.default", "aten.cumprod.default")
def _scan(lw: Lowering, node: fx.Node, x: TV, dim: int, *, dtype: Any = None) -> Any:
    out = meta_layout(node)
    stype = "sum" if "cumsum" in str(node.target) else "prod"
    acc = acc_dtype("sum", out.dtype if dtypes.is_float(out.dtype) else x.dtype)
    if dtypes.is_int(acc) and stype == "prod":
        return None
    name = lw.fresh(node.name)
    vs = lw.vars_for(name, x.shape)
    d = dim + x.ndim if dim < 0 else dim
    body = cast(x.at(list(vs)), acc)
    return lw.add(ScanNode(name, Layout.contiguous(x.shape, out.dtype), stype=stype, axis=d, vars=vs, body=body))
