"""Convolutions as implicit GEMMs (the ``conv-gemm`` variant's lowering).

A convolution is a GEMM whose operand is never written: per image (and per group),

    out[co, o] = sum over (ci, tap) of W[co, ci, tap] * X[ci, o * stride + tap * dilation - padding]

so A is the weight seen as ``[Cout/groups, Cin/groups * taps]`` (its own memory order) and B is the
input "im2col" matrix ``[Cin/groups * taps, output positions]``, an index expression over the input
with masked loads where a tap falls in the padding. The matmul template loads B's tiles straight
from the input (Inductor's Triton convolution template does the same), and because output positions
are the GEMM's N axis the output tile ``[channels, positions]`` *is* NCHW memory: whatever follows
the convolution (bias, activations, scales, residuals) is the template's epilogue, in registers,
and the convolution's output is written once in the reference's layout, or not at all. That is what
cuDNN cannot do under PyTorch: torch.compile runs cuDNN and one more pass for the epilogue
(BENCHMARKS.md, 2026-12-03: on KernelBench level 2 the epilogue's read and write were a third of
torch.compile's time).

Batch dims are the image and the group, so grouped convolutions are one launch. A transposed
convolution with stride 1 is the same gather with the tap reversed (``o + padding - tap *
dilation``). With a larger stride that gather (input ``(o + padding - tap) / stride`` where it
divides) masks most taps off, 3 of 4 for a 2-D stride of 2, and their products still cost
tensor-core time: on the H200 such candidates ran 15-30x slower than cuDNN (KernelBench level 2
#16, #91, 2026-12-03). So the output is split into its *phases* ``f = o % stride`` (sub-pixel
decomposition): output ``o = stride * q + f`` takes only the taps
``r + stride * j`` with ``r = (f + padding) % stride``, reading input ``q + (f + padding) //
stride - j``, so each phase is a dense GEMM over ``ceil(k / stride)`` tap slots per dim (a slot
past the kernel, in phases with fewer taps, is a masked weight: 9 products of 16 for 3 x 3 at
stride 2, not 9 of 36). The phases of the last dim share output rows, so they go along N (column
``n = stride * j + f``: A depends on the column only through ``n % stride``) and the matmul
template computes them in one program, one accumulator each, and interleaves them in registers
before the epilogue (``templates/matmul_operands.py``): the output row is stored contiguously,
where one phase a program stored every ``stride``-th element. That was the loss measured on an H100
(2026-12-06, KernelBench level 2 #16: 9.7 of the candidate's 10.1 ms in the GEMM, bound by L2 on
the stores, its store layout one thread per output channel: a 4-byte sector write per element;
sm_90a now: 16 ``st.global.v4`` per thread where there were 64 ``st.global.b32``, 166 registers
where there were 216). The other dims' phases are batch dims of the launch, and a last-dim stride
that is not a power of two (no ``tl.join`` tree) keeps its phases there too. #16 (3 x 3, stride
2, 64 -> 64 channels, 128 x 128 -> 256 x 256, then Mish, add, hardtanh, scale) moves 0.54 GB in
and 2.15 GB out where torch.compile runs cuDNN (2.15 GB out) and the epilogue (2.15 GB in, 2.15
GB out). The phases of one image stay adjacent in the grid (never folded,
``templates/matmul_fold.py``). Taken undilated. Where the output is not a multiple of the stride
(``ConvTranspose2d(k=3, stride=2, padding=1)`` without ``output_padding``: 2H - 1; KB level 2 #91's
129 x 129, #96's 31 x 63 x 63) the phases differ in length by one: every phase computes the longest
one's positions and the epilogue masks the lanes past the output (``MatmulNode.out_valid``; a row
reduction over such a GEMM's columns is not fused into it: ``schedule._compatible``); until 2026-12-06 those stayed cuDNN's.
Measured back to
back on an H100 (2026-12-06, at the 2 pipeline stages phase GEMMs now take: each phase's A tile sits
in every stage): #16 3.43-3.50 ms against torch.compile's 3.45, #26 1.06 ms against 1.79 for its
channels-last cuDNN variant, #36 0.70 against 0.56. Until a judged sweep ranks them they are offered
after cuDNN's plans (``choices.py``). Depthwise convolutions (one input channel per group) have a K of ``taps`` (9 for 3x3): no
GEMM shape, left to cuDNN.

fp32 convolutions run on TF32 tensor cores where PyTorch lets cuDNN use TF32 (its default,
``torch.backends.cudnn.allow_tf32``): the judge holds such a candidate to the error a TF32
convolution has (``egg/evaluate/anchor.py``). The tensor cores truncate fp32 operands to TF32,
which missed that allowance by 2.6x on the H200; rounding each tile in registers before the dot
made the GEMM 4.6x slower (KernelBench level 2 #71, 0.416 -> 1.918 ms, 2026-12-03: the operands no
longer go straight from memory to the tensor cores). So the input and the weight are rounded once,
in a pass over memory that a producer of the input fuses into, and the GEMM loads TF32 values.

Hopper's tensor cores read 32-bit operands from shared memory K-major only (``lower_matmul.k_major``:
an fp32 GEMM with an N-major B ran at half the speed of the same GEMM with B K-major, H200,
2026-12-04). Gathered from NCHW memory, B's tile is N-major (output positions are contiguous, the
(channel, tap) pairs are not). With ``LowerOptions.kmajor`` the rounding pass writes the input
channels-last and the weight channels-innermost, and K runs over (tap, channel) with the channel
fastest: B's tile is then K-major in runs of Cin/groups, A's wholly. Only where Cin/groups is a
multiple of 4 (runs that start on 16 bytes); otherwise the NCHW gather stays. Not yet measured
on the GPU: what it does to conv-gemm-first-max-k's line (cuDNN wins from K = 576) is the next
measurement.

The rounding pass reads and writes the whole input: where the input is large next to the output
(KernelBench level 1 #76, a strided 1-D convolution: 8.6 GB in, 5.7 GB out) it was ~4 ms of the
10.8 the candidate ran, against torch.compile's 9.85 (H200, 2026-12-04). ``LowerOptions.conv =
"gemm-registers"`` (the ``conv-gemm-registers`` variant) drops that pass: the GEMM is computed as
``C^T = B^T A^T`` (``MatmulNode.swapped``), so the gathered input is the dot's *A* operand, which
wgmma takes from registers in any layout, and it is rounded to TF32 there, once per element and
output-channel tile; only the weight (small) is rounded in memory, in an order where K is
contiguous (the swapped dot's B operand, read from shared memory K-major). What made per-tile
rounding 4.6x slower (the gathered tile as the dot's B operand, rounded in registers and written
back to shared memory) does not arise. Not yet measured on the GPU.
"""

from __future__ import annotations

import math
from typing import Any

import torch.fx as fx

from agents.expert.ir.expr import Masked, Op, loads_of
from agents.expert.ir.index import Affine, Var, row_major, unravel
from agents.expert.ir.lower import Lowering, meta_layout
from agents.expert.ir.lower_matmul import ALIGN, tf32_rounded
from agents.expert.ir.lower_windows import all_of, inside, per_dim
from agents.expert.ir.nodes import Layout, MatmulNode, View, innermost_layout, ordered_layout
from agents.expert.ir.values import TV, from_view

MIN_K = 16  # a tl.dot's smallest K: a convolution reducing fewer products per output is no GEMM


def conv_gemm(lw: Lowering, node: fx.Node, x: Any, weight: Any, bias: Any, stride: Any, padding: Any,
              dilation: Any, transposed: Any, output_padding: Any, groups: Any) -> TV | None:
    """The convolution as a :class:`MatmulNode`, or None (the plain extern) where it is no GEMM."""
    if not isinstance(x, TV) or not isinstance(weight, TV) or x.ndim not in (3, 4, 5) or weight.ndim != x.ndim \
            or x.dtype not in ("float32", "float16", "bfloat16") or weight.dtype != x.dtype \
            or not (bias is None or isinstance(bias, TV)) or not isinstance(groups, int):
        return None
    nd = x.ndim - 2
    s, p, d = per_dim(stride, nd), per_dim(padding, nd), per_dim(dilation, nd)
    out = meta_layout(node)
    batch_n, cin = x.shape[0], x.shape[1]
    cout, osp, isp, ksz = out.shape[1], out.shape[2:], x.shape[2:], weight.shape[2:]
    phased = bool(transposed) and any(v != 1 for v in s)
    if phased and any(v != 1 for v in d):
        return None  # sub-pixel phases only undilated (module docstring)
    # taps: per dim, the kernel positions a GEMM row walks (a phase's: at most ceil(k / stride))
    slots = [-(-k // v) for k, v in zip(ksz, s)] if phased else list(ksz)
    cin_g, cout_g, taps = cin // groups, cout // groups, math.prod(slots)
    if cin_g * taps < MIN_K or cout_g < 1:
        return None  # tiny reductions: cuDNN's (a depthwise one: the stencil, lower_conv_depthwise.py)
    if groups > 1 and cin_g == 1 and cout_g == 1:
        # depthwise at any window (KernelBench level 1 #85's 3 x 7): a GEMM of one row a group wastes the
        # dot's 16 rows and, in fp32, pays a rounding pass over the input; the stencil reads it once
        # (lower_conv_depthwise.py, which the caller falls back to)
        return None
    name = lw.fresh(node.name)
    # positions a batch entry computes: each phase the longest phase's (ceil(o / stride)); where the
    # output is not a multiple of the stride the shorter phases' last positions are past the output
    # and only their stores are masked (``MatmulNode.out_valid``)
    qsp = [-(-o // v) for o, v in zip(osp, s)] if phased else list(osp)
    # the last dim's phases share output rows: they go along N, one program computing all of them and
    # interleaving them before the store (templates/matmul_operands.py); the template joins powers of 2
    inner = s[-1] if phased and s[-1] in (2, 4) else 1
    batched = nd - 1 if inner > 1 else nd  # the dims whose phases are batch dims of the launch
    batch = (batch_n, groups) if groups > 1 else (batch_n,)
    batch = (*batch, *s[:batched]) if phased else batch  # a transposed convolution's output phases (o % stride)
    bvars = tuple(Var(f"{name}_b{i}", n) for i, n in enumerate(batch))
    npos = math.prod(qsp) * inner
    mv, nv, kv = Var(f"{name}_m", cout_g), Var(f"{name}_n", npos), Var(f"{name}_k", cin_g * taps)
    group = Affine.of(bvars[1]) if groups > 1 else Affine.of(0)
    co = group * cout_g + Affine.of(mv)
    tf32 = lw.options.tf32 and x.dtype == "float32"
    # the input rounded in registers, as the swapped dot's A operand (module docstring), where the
    # rounded weight's rows (one per output channel, (Cin or Cin/groups) x taps) start on 16 bytes
    registers = tf32 and not phased and lw.options.conv == "gemm-registers" and \
        ((cin if transposed else cin_g) * taps) % ALIGN == 0
    # channels fastest along K (module docstring), except where a GEMM produced the input: its epilogue
    # writes the rounded copy from its own NCHW tile, and a channels-last one would be a pass of its own
    kmajor = tf32 and not registers and lw.options.kmajor and cin_g % ALIGN == 0 and not _reads_a_gemm(lw, x)
    if kmajor:
        *tap, ci = unravel(Affine.of(kv), [*slots, cin_g])
    else:
        ci, *tap = unravel(Affine.of(kv), [cin_g, *slots])
    pos = unravel(Affine.of(nv), [*qsp, inner])
    pos, column_phase = pos[:nd], pos[nd:]  # column_phase: n % inner, the last dim's phase along N
    if phased:  # slot j of phase f walks tap r + stride * j, r = (f + padding) % stride (module docstring)
        phase = [*(Affine.of(v) for v in bvars[len(bvars) - batched:]), *column_phase[:nd - batched]]
        residue = [(f + p[k]).mod(s[k]) for k, f in enumerate(phase)]
        carry = [(f + p[k]).floordiv(s[k]) for k, f in enumerate(phase)]
        src = [pos[k] + carry[k] + tap[k] * -1 for k in range(nd)]  # the input position each slot reads
        tap = [residue[k] + tap[k] * s[k] for k in range(nd)]
        weight_mask = all_of([c for k in range(nd) for c in inside(tap[k], ksz[k])])  # slots past the kernel
    if registers:  # only the weight is rounded in memory, (input channel, taps) contiguous per output channel
        weight = tf32_rounded(lw, weight, f"{node.name}_w_tf32",
                              ordered_layout(weight.shape, [1, 0, *range(2, weight.ndim)], weight.dtype)
                              if transposed else None)  # [Cin, Cout/groups, *k]: its second dim outermost
    elif tf32:  # rounded once in memory (a pass over the input), not per tile (module docstring)
        x = tf32_rounded(lw, x, f"{node.name}_x_tf32", innermost_layout(x.shape, 1, x.dtype) if kmajor else None)
        w_channels = 0 if transposed else 1
        weight = tf32_rounded(lw, weight, f"{node.name}_w_tf32",
                              innermost_layout(weight.shape, w_channels, weight.dtype) if kmajor else None)
    # A: the weight as [Cout/groups, Cin/groups * taps]
    if transposed:  # weight [Cin, Cout/groups, *k]
        a_expr = weight.at([group * cin_g + ci, Affine.of(mv), *tap])
    else:  # weight [Cout, Cin/groups, *k]
        a_expr = weight.at([co, ci, *tap])
    if phased and weight_mask is not None:
        a_expr = Masked(weight_mask, a_expr, 0.0)
    # B: the input gathered per (channel, tap) and output position
    if not phased:
        src = [(pos[k] + p[k] + tap[k] * -d[k]) if transposed else (pos[k] * s[k] + tap[k] * d[k] + -p[k])
               for k in range(nd)]
    conds = [c for k in range(nd) for c in inside(src[k], isp[k])]
    if phased and weight_mask is not None:  # a slot past the kernel: no read (and no 0 * inf = NaN)
        conds.append(weight_mask)
    value = x.at([Affine.of(bvars[0]), group * cin_g + ci, *src])
    mask = all_of(conds)
    if registers:
        value = Op("round_tf32", (value,), "float32")
    b_expr = Masked(mask, value, 0.0) if mask is not None else value
    bias_expr = bias.at([co]) if bias is not None else None
    # the GEMM's output [N, (G,) Cout/G, positions] is the NCHW output's memory; with phases it is
    # [N, (G,) *phases, Cout/G, positions of a phase], and out_index says where each element lands
    layout = Layout.contiguous((*batch, cout_g, npos), out.dtype)
    out_index = (Affine.of(bvars[0]), co, *(pos[k] * s[k] + phase[k] for k in range(nd))) if phased else None
    # padded phases: the lanes whose output position exists (a condition only where some do not)
    valid = all_of([c for k in range(nd) if osp[k] % s[k] for c in inside(pos[k] * s[k] + phase[k], osp[k])]) \
        if phased else None
    mm = lw.add(MatmulNode(name, layout, batch=batch, m=cout_g, n=npos, k=cin_g * taps, a=a_expr, b=b_expr,
                           bias=bias_expr, bvars=bvars, mvar=mv, nvar=nv, kvar=kv, aten="aten.convolution",
                           tf32_operands=tf32, swapped=registers, out_index=out_index,
                           out_shape=tuple(out.shape) if phased else None, out_valid=valid))
    assert mm.view is not None
    if not phased:
        return from_view(View(mm.view.buffer, Layout.contiguous(out.shape, out.dtype)))

    def load(idx: list[Affine]) -> Any:  # NCHW output index -> the phase-major buffer's element
        c, o = idx[1], idx[2:]
        lead = [idx[0], *([c.floordiv(cout_g)] if groups > 1 else [])]
        return mm.at([*lead, *(o[k].mod(s[k]) for k in range(batched)), c.mod(cout_g),
                      row_major([*(o[k].floordiv(s[k]) for k in range(batched)), *o[batched:]],
                                [*qsp[:batched], *(qsp[k] * s[k] for k in range(batched, nd))])])

    return TV(tuple(out.shape), out.dtype, load)


def _reads_a_gemm(lw: Lowering, tv: TV) -> bool:
    """Whether ``tv`` reads the output of a GEMM (a matmul or an implicit-GEMM convolution) of this graph."""
    probe = tv.at([Var(f"_p{k}", s) for k, s in enumerate(tv.shape)])
    return any(isinstance(lw.nodes.get(ld.buffer), MatmulNode) for ld in loads_of(probe))
