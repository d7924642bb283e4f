"""Pools as reductions over window dims: the domain is (leading dims, output positions, window
offsets) with the window dims reduced, so one reduction node computes every window; padding and
clipped windows are masked loads (``-inf`` for max, 0 for sums). ``avg_pool``'s divisor follows
torch (window clipped to the padded input, or to the input without ``count_include_pad``): a
constant when every window is whole, else a count reduction beside the sum. Adaptive pools use
torch's ``floor(o * In / Out)`` .. ``ceil((o + 1) * In / Out)`` windows.

**Windows over channels-last memory are unrolled.** After a channels-last convolution (the
``conv-channels-last`` variant) a pool reads NHWC memory and writes NCHW: neighbouring outputs (along
W) are ``stride x C`` elements apart in the input, so a reduction kernel over the NCHW outputs reads
every element from a sector of its own (one 4-byte load per 32-byte sector: on KernelBench level 2
#46, 1.04 GB of conv output read that way is ~260M sector requests, ~1.5 ms of L2 traffic at the
H200's rate, against 0.24 ms to stream it coalesced). A window of at most ``UNROLL_TAPS_MAX`` taps
whose data load walks a leading dim (the channel) with stride 1 is instead a lazy pointwise value,
one masked load per tap folded in the taps' order (torch's summation order), so the kernel that
stores it is a pointwise kernel and the pointwise template tiles it: its loads walk the channels,
its stores walk W (``templates/pointwise.transposed_place``), as Inductor's unrolled pools do. The
per-output work is the reduction's (each tap's expression once). A window whose unrolled taps would
read more than ``UNROLL_LOADS_MAX`` distinct loads (a pool of an unrolled pool: 8 x 8 taps of a
softmax) stays a reduction, as do windows over NCHW memory, whose configs the H200 probes tuned.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable
from typing import Any

from torch import fx

from agents.expert.ir import dtypes
from agents.expert.ir.expr import Const, Expr, IndexValue, Masked, Op, cast, loads_of, substitute
from agents.expert.ir.index import Affine, Var
from agents.expert.ir.lower import Lowering, meta_layout, register
from agents.expert.ir.lower_reduce import acc_dtype
from agents.expert.ir.nodes import Layout, ReductionNode
from agents.expert.ir.values import TV

UNROLL_TAPS_MAX = 27  # taps of a window over channels-last memory unrolled into a pointwise value (3 x 3 x 3)
UNROLL_LOADS_MAX = 64  # distinct loads the unrolled taps may read per output (else the window stays a reduction)


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
            dilation: list[int], valid: list[Any], rtype: str, hint: str, acc: str,
            pad: Any) -> tuple[TV, Callable[[Expr | None], Any], list[Affine]]:
    """A reduction over a window per output position: domain (lead..., out..., window...); or, over
    channels-last memory, the taps unrolled (module docstring). Returns the reduced value, a function
    that counts the taps where a condition over the window holds (None: the window's own mask, the
    taps inside the input and valid), and the source index (affine in the domain's vars)."""
    nd = len(out_spatial)
    lead = x.shape[:x.ndim - nd]
    domain = (*lead, *out_spatial, *kmax)
    name = lw.fresh(hint)
    vs = lw.vars_for(name, domain)
    lv, ov, kv = vs[:len(lead)], vs[len(lead):len(lead) + nd], vs[len(lead) + nd:]

    conds: list[Expr] = []
    src = [Affine.of(v) for v in lv]
    for d in range(nd):
        i = starts[d](Affine.of(ov[d])) + Affine.of(kv[d]) * dilation[d]
        conds += inside(i, x.shape[x.ndim - nd + d])
        if valid[d] is not None:
            conds.append(valid[d](Affine.of(ov[d]), Affine.of(kv[d])))
        src.append(i)
    value = cast(x.at(src), acc)
    mask = all_of(conds)
    body = Masked(mask, value, pad) if mask is not None else value
    out_shape = (*lead, *out_spatial)
    dtype = acc if rtype == "sum" else x.dtype
    if math.prod(kmax) <= UNROLL_TAPS_MAX and _reads_channels_last(body, set(lv), set(kv)):
        taps = [dict(zip(kv, (Affine.of(t) for t in tap))) for tap in itertools.product(*(range(k) for k in kmax))]
        terms = [substitute(body, env) for env in taps]
        if len({ld for t in terms for ld in loads_of(t)}) <= UNROLL_LOADS_MAX:
            total = _unrolled(terms, "maximum" if rtype == "max" else "add", acc, dtype, (*lv, *ov), out_shape)

            def counted(cond: Expr | None) -> TV:
                held = cast(cond if cond is not None else mask if mask is not None else Const(True, "bool"), acc)
                return _unrolled([substitute(held, env) for env in taps], "add", acc, acc, (*lv, *ov), out_shape)

            return total, counted, src
    reduced = (*([False] * (len(lead) + nd)), *([True] * nd))

    def count(cond: Expr | None) -> TV:
        held = cond if cond is not None else mask
        return lw.add(ReductionNode(lw.fresh(f"{hint}_count"), Layout.contiguous(out_shape, acc), rtype="sum",
                                    domain=domain, reduced=reduced, vars=vs,
                                    body=cast(held, acc) if held is not None else Const(1.0, acc)))

    tv = lw.add(ReductionNode(name, Layout.contiguous(out_shape, dtype), rtype=rtype, domain=domain,
                              reduced=reduced, vars=vs, body=body))
    return tv, count, src


def _reads_channels_last(body: Expr, lead: set[Var], taps: set[Var]) -> bool:
    """Some load of the window's data (its index moves with the taps) walks a leading dim with stride 1:
    a channel, in NHWC memory. A per-channel load (a bias) does not move with the taps."""
    for ld in loads_of(body):
        if ld.index.vars() & taps and any(abs(c) == 1 and atom in lead for atom, c in ld.index.terms):
            return True
    return False


def _unrolled(terms: list[Expr], op: str, acc: str, dtype: str, out_vars: tuple[Var, ...],
              out_shape: tuple[int, ...]) -> TV:
    """The taps' values folded in order (a lazy value over the output index)."""
    folded = terms[0]
    for t in terms[1:]:
        folded = Op(op, (folded, t), acc)
    folded = cast(folded, dtype)

    def load(idx: list[Affine]) -> Expr:
        return substitute(folded, dict(zip(out_vars, idx)))

    return TV(out_shape, dtype, load)


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
    values, _, _ = _window(lw, node, x, spatial, starts, k, dl, [None] * nd, "max", node.name,
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
    total, count, src = _window(lw, node, x, spatial, starts, k, [1] * nd, [None] * nd, "sum", node.name, acc, 0.0)
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
            divisor = count(within)

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
    total, count, _ = _window(lw, node, x, out_sp, starts, kmax, [1] * nd, valid, rtype, node.name, acc, pad)
    out = meta_layout(node) if rtype == "sum" else meta_layout(node, node.meta["val"][0])
    if rtype != "sum":
        return total
    if all(v is None for v in valid):
        divisor: Any = float(math.prod(kmax))
    else:
        divisor = count(None)

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
