"""Pools as reductions over window dims: the domain is (leading dims, output positions, window
offsets) with the window dims reduced, so one reduction node computes every window; padding and
clipped windows are masked loads (``-inf`` for max, 0 for sums). ``avg_pool``'s divisor follows
torch (window clipped to the padded input, or to the input without ``count_include_pad``): a
constant when every window is whole, else a count reduction beside the sum. Adaptive pools use
torch's ``floor(o * In / Out)`` .. ``ceil((o + 1) * In / Out)`` windows.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from torch import fx

from agents.expert.ir import dtypes
from agents.expert.ir.expr import Const, Expr, IndexValue, Masked, Op, cast
from agents.expert.ir.index import Affine
from agents.expert.ir.lower import Lowering, meta_layout, register
from agents.expert.ir.lower_reduce import acc_dtype
from agents.expert.ir.nodes import Layout, ReductionNode
from agents.expert.ir.values import TV


def per_dim(v: Any, nd: int, default: Any = None) -> list[int]:
    """A window argument (int, or one value per spatial dim; None or [] for ``default``) per dim."""
    if v is None or v == []:
        v = default
    v = [v] if isinstance(v, int) else list(v)
    return [int(x) for x in (v * nd if len(v) == 1 else v)]


def inside(i: Affine, size: int) -> list[Expr]:
    """The tests that keep a gathered index ``i`` in ``[0, size)``, only those its range can fail."""
    lo, hi = i.bounds()
    conds: list[Expr] = []
    if lo < 0:
        conds.append(Op("ge", (IndexValue(i), Const(0, "int64")), "bool"))
    if hi >= size:
        conds.append(Op("lt", (IndexValue(i), Const(size, "int64")), "bool"))
    return conds


def all_of(conds: list[Expr]) -> Expr | None:
    mask = None
    for c in conds:
        mask = c if mask is None else Op("logical_and", (mask, c), "bool")
    return mask


def _window(lw: Lowering, node: fx.Node, x: TV, out_spatial: tuple[int, ...], starts: list[Any], kmax: list[int],
            dilation: list[int], valid: list[Any], rtype: str, hint: str, acc: str, pad: Any) -> tuple[TV, Any]:
    """A reduction over a window per output position: domain (lead..., out..., window...)."""
    nd = len(out_spatial)
    lead = x.shape[:x.ndim - nd]
    domain = (*lead, *out_spatial, *kmax)
    name = lw.fresh(hint)
    vs = lw.vars_for(name, domain)
    lv, ov, kv = vs[:len(lead)], vs[len(lead):len(lead) + nd], vs[len(lead) + nd:]
    conds: list[Expr] = []
    src = [Affine.of(v) for v in lv]
    for d in range(nd):
        start = starts[d](Affine.of(ov[d]))
        i = start + Affine.of(kv[d]) * dilation[d]
        conds += inside(i, x.shape[x.ndim - nd + d])
        if valid[d] is not None:
            conds.append(valid[d](Affine.of(ov[d]), Affine.of(kv[d])))
        src.append(i)
    value = cast(x.at(src), acc)
    mask = all_of(conds)
    body = Masked(mask, value, pad) if mask is not None else value
    reduced = (*([False] * (len(lead) + nd)), *([True] * nd))
    out_shape = (*lead, *out_spatial)
    dtype = acc if rtype == "sum" else x.dtype
    tv = lw.add(ReductionNode(name, Layout.contiguous(out_shape, dtype), rtype=rtype, domain=domain,
                              reduced=reduced, vars=vs, body=body))
    return tv, (vs, mask, domain, reduced, out_shape, src)


def _pool_args(x: TV, nd: int, kernel: Any, stride: Any, padding: Any, dilation: Any = 1) -> tuple[list[int], ...]:
    k = per_dim(kernel, nd, 1)
    return k, per_dim(stride, nd, k), per_dim(padding, nd, 0), per_dim(dilation, nd, 1)


@register("aten.max_pool2d_with_indices.default", "aten.max_pool3d_with_indices.default")
def _max_pool(lw: Lowering, node: fx.Node, x: TV, kernel: Any, stride: Any = None, padding: Any = 0,
              dilation: Any = 1, ceil_mode: bool = False) -> Any:
    if any(u.target is not operator.getitem or u.args[1] != 0 for u in node.users):
        return None  # the indices are used: torch computes them
    nd = 2 if "2d" in str(node.target) else 3
    k, s, p, dl = _pool_args(x, nd, kernel, stride, padding, dilation)
    out = meta_layout(node, node.meta["val"][0])
    spatial = out.shape[-nd:]
    starts = [lambda o, s=s[d], p=p[d]: o * s - p for d in range(nd)]
    pad = float("-inf") if dtypes.is_float(x.dtype) else -(1 << 62)
    values, _ = _window(lw, node, x, spatial, starts, k, dl, [None] * nd, "max", node.name,
                        dtypes.compute(x.dtype), pad)
    return values, None


@register("aten.avg_pool2d.default", "aten.avg_pool3d.default")
def _avg_pool(lw: Lowering, node: fx.Node, x: TV, kernel: Any, stride: Any = None, padding: Any = 0,
              ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: Any = None) -> Any:
    nd = 2 if "2d" in str(node.target) else 3
    k, s, p, _ = _pool_args(x, nd, kernel, stride, padding)
    out = meta_layout(node)
    spatial = out.shape[-nd:]
    starts = [lambda o, s=s[d], p=p[d]: o * s - p for d in range(nd)]
    acc = acc_dtype("sum", x.dtype)
    total, (vs, _mask, domain, reduced, oshape, src) = _window(lw, node, x, spatial, starts, k, [1] * nd,
                                                               [None] * nd, "sum", node.name, acc, 0.0)
    in_sp = x.shape[-nd:]
    if divisor_override:
        divisor: Any = float(divisor_override)
    else:
        lo_b = [-pp for pp in p] if count_include_pad else [0] * nd
        hi_b = [in_sp[d] + p[d] for d in range(nd)] if count_include_pad else list(in_sp)
        full = all(0 * s[d] - p[d] >= lo_b[d] and (spatial[d] - 1) * s[d] - p[d] + k[d] <= hi_b[d] for d in range(nd))
        if full:
            divisor = float(math.prod(k))
        else:
            conds: list[Expr] = []
            for d in range(nd):
                i = src[len(src) - nd + d]
                conds.append(Op("ge", (IndexValue(i), Const(lo_b[d], "int64")), "bool"))
                conds.append(Op("lt", (IndexValue(i), Const(hi_b[d], "int64")), "bool"))
            within = all_of(conds)
            assert within is not None
            cname = lw.fresh(f"{node.name}_count")
            divisor = lw.add(ReductionNode(cname, Layout.contiguous(oshape, acc), rtype="sum", domain=domain,
                                           reduced=reduced, vars=vs, body=cast(within, acc)))

    def load(idx: list[Affine]) -> Expr:
        den = Const(divisor, acc) if isinstance(divisor, float) else divisor.at(idx)
        return cast(Op("div", (total.at(idx), den), acc), out.dtype)

    return TV(out.shape, out.dtype, load)


def _adaptive(lw: Lowering, node: fx.Node, x: TV, output_size: Any, rtype: str, nd: int) -> Any:
    in_sp = x.shape[-nd:]
    out_sp = tuple(int(o) for o in output_size)
    starts, kmax, valid = [], [], []
    for d in range(nd):
        n_in, n_out = in_sp[d], out_sp[d]
        begin = [(o * n_in) // n_out for o in range(n_out)]
        end = [-(-((o + 1) * n_in) // n_out) for o in range(n_out)]
        kmax.append(max(e - b for b, e in zip(begin, end)))
        starts.append(lambda o, n_in=n_in, n_out=n_out: (o * n_in).floordiv(n_out))
        uniform = all(e - b == kmax[-1] for b, e in zip(begin, end))
        valid.append(None if uniform else (
            lambda o, k, n_in=n_in, n_out=n_out: Op("lt", (IndexValue(k), IndexValue(
                ((o + 1) * n_in + (n_out - 1)).floordiv(n_out) - (o * n_in).floordiv(n_out))), "bool")))
    acc = acc_dtype("sum", x.dtype) if rtype == "sum" else dtypes.compute(x.dtype)
    pad = 0.0 if rtype == "sum" else float("-inf")
    total, (vs, mask, domain, reduced, oshape, _src) = _window(lw, node, x, out_sp, starts, kmax, [1] * nd, valid,
                                                               rtype, node.name, acc, pad)
    out = meta_layout(node) if rtype == "sum" else meta_layout(node, node.meta["val"][0])
    if rtype != "sum":
        return total
    if all(v is None for v in valid):
        divisor: Any = float(math.prod(kmax))
    else:
        cname = lw.fresh(f"{node.name}_count")
        body = cast(mask, acc) if mask is not None else Const(1.0, acc)
        divisor = lw.add(ReductionNode(cname, Layout.contiguous(oshape, acc), rtype="sum", domain=domain,
                                       reduced=reduced, vars=vs, body=body))

    def load(idx: list[Affine]) -> Expr:
        den = Const(divisor, acc) if isinstance(divisor, float) else divisor.at(idx)
        return cast(Op("div", (total.at(idx), den), acc), out.dtype)

    return TV(out.shape, out.dtype, load)


@register("aten._adaptive_avg_pool2d.default", "aten._adaptive_avg_pool3d.default",
          "aten.adaptive_avg_pool1d.default")
def _adaptive_avg(lw: Lowering, node: fx.Node, x: TV, output_size: Any) -> Any:
    nd = 3 if "3d" in str(node.target) else 2 if "2d" in str(node.target) else 1
    return _adaptive(lw, node, x, output_size, "sum", nd)


@register("aten.adaptive_max_pool2d.default", "aten.adaptive_max_pool3d.default")
def _adaptive_max(lw: Lowering, node: fx.Node, x: TV, output_size: Any) -> Any:
    if any(u.args[1] != 0 for u in node.users):
        return None
    nd = 3 if "3d" in str(node.target) else 2
    return _adaptive(lw, node, x, output_size, "max", nd), None
