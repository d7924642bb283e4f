"""Depthwise convolutions as stencils (the ``conv-depthwise`` variant's lowering).

A depthwise convolution (``groups`` equal to the input and output channels) reduces a handful of
products per output, one channel's window times that channel's taps: 9 for a 3 x 3 kernel, 49 for
ConvNeXt's 7 x 7. That is no GEMM (the implicit GEMM needs K >= 16, and would waste its tensor cores
on it: ``lower_conv_gemm.MIN_K``) and no tensor-core work for cuDNN either; it is a memory-bound
stencil, which cuDNN's and ATen's depthwise kernels run as an extern call that nothing fuses into:
torch.compile keeps it extern too, so a bias, an activation or a residual after it is another pass
over the output. Here the output is a lazy value over the output index: the taps unrolled, each a
masked load of the input (0 outside it, as the zero padding is) times the channel's weight, folded
in the taps' order in fp32 (the 16-bit inputs upcast), then the bias. The kernel that stores it is
a pointwise kernel (the pointwise template tiles it; neighbouring outputs along the last dim read
neighbouring inputs, and a window's rows come from L1/L2), with whatever follows the convolution
fused into it. Memory traffic: the input read once from DRAM (its taps' reuse is in cache) and the
output written once, where the extern call writes the output and its epilogue reads it back.

Only forward (not transposed) depthwise convolutions with one output channel per input channel and
at most ``TAPS_MAX`` taps; the rest stay the extern. Whether the stencil beats the library kernel
for a problem is the judge's measurement: this is a variant, not a rule.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch.fx as fx

from agents.expert.ir import dtypes
from agents.expert.ir.expr import Expr, Masked, Op, cast
from agents.expert.ir.index import Affine
from agents.expert.ir.lower import Lowering, meta_layout
from agents.expert.ir.lower_windows import all_of, inside, per_dim
from agents.expert.ir.values import TV

TAPS_MAX = 64  # taps unrolled per output (ConvNeXt's 7 x 7 is 49); a larger window stays the extern


def is_depthwise(x: Any, weight: Any, transposed: Any, groups: Any) -> bool:
    """A forward convolution whose every output channel reads one input channel of its own."""
    return (isinstance(x, TV) and isinstance(weight, TV) and not transposed and isinstance(groups, int)
            and x.ndim in (3, 4, 5) and weight.ndim == x.ndim and groups > 1 and groups == x.shape[1]
            and weight.shape[0] == groups and weight.shape[1] == 1)


def depthwise(lw: Lowering, node: fx.Node, x: Any, weight: Any, bias: Any, stride: Any, padding: Any,
              dilation: Any, transposed: Any, groups: Any) -> TV | None:
    """The convolution as a lazy stencil over its output, or None (the plain extern)."""
    if not is_depthwise(x, weight, transposed, groups) or not (bias is None or isinstance(bias, TV)) \
            or x.dtype not in ("float32", "float16", "bfloat16") or weight.dtype != x.dtype:
        return None
    nd = x.ndim - 2
    ksz = weight.shape[2:]
    if math.prod(ksz) > TAPS_MAX or isinstance(padding, str):  # aten's padding is numbers; a string is not ours
        return None
    s, p, d = per_dim(stride, nd), per_dim(padding, nd), per_dim(dilation, nd)
    out = meta_layout(node)
    acc = dtypes.compute(x.dtype)
    taps = list(itertools.product(*(range(k) for k in ksz)))
    in_sp = x.shape[2:]

    def load(idx: list[Affine]) -> Expr:
        n, c, pos = idx[0], idx[1], idx[2:]
        total: Expr | None = None
        for tap in taps:  # torch's order: the window row-major, each product rounded to the accumulator
            src = [pos[i] * s[i] - p[i] + tap[i] * d[i] for i in range(nd)]
            mask = all_of([cond for i in range(nd) for cond in inside(src[i], in_sp[i])])
            value = cast(x.at([n, c, *src]), acc)
            term = Op("mul", (Masked(mask, value, 0.0) if mask is not None else value,
                              cast(weight.at([c, Affine.of(0), *(Affine.of(t) for t in tap)]), acc)), acc)
            total = term if total is None else Op("add", (total, term), acc)
        assert total is not None
        if bias is not None:
            total = Op("add", (total, cast(bias.at([c]), acc)), acc)
        return cast(total, out.dtype)

    return TV(out.shape, out.dtype, load)


__all__ = ["TAPS_MAX", "depthwise", "is_depthwise"]
