"""A chained GEMM in the matmul template's epilogue (back-to-back GEMMs, as flash attention's P @ V).

Where a GEMM's output rows fit one tile (``BLOCK_N`` spans its N, as for row reductions in the
epilogue) and a second GEMM reads that epilogue's value as its A operand (``softmax(q @ k.mT) @ v``
in any spelling: ``torch.matmul``, ``bmm``, ``einsum``, upcast or not, masked or not; an MLP's
``act(x @ w1.T) @ w2.T`` with a short hidden size), the scheduler puts both in one kernel
(``schedule.Policy.chain_gemms``) and the second GEMM runs here on the first one's tile: its K is the
first one's N, so every K step of its dot is already in registers and the intermediate (the
probabilities: ``B * H * S * S`` 16-bit values, as many bytes as q, k and v together at S = 256 and
d = 64) is never written or read back. Each program loads the second operand's ``[N1, N2]`` tile
(``v``: re-read by every row tile, as the second GEMM would read it anyway) and stores ``[BLOCK_M,
N2]`` outputs through the second GEMM's own epilogue.

Memory traffic, ``short_seq_attention`` at production (64 x 16 heads x 256 tokens x d 64, bf16):
unchained, the first kernel reads q, k (67 MB) and writes P (134 MB), the second reads P and v (168
MB) and writes the output (34 MB): 403 MB. Chained: q, k, v read and the output written, 134 MB.

Lanes past the first GEMM's N are zeroed in P (the epilogue computed them from masked loads) and the
second operand's rows past it load as zeros, so padded K steps add nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.expert.ir.dtypes import TL
from agents.expert.ir.expr import substitute
from agents.expert.ir.index import Affine, Var
from agents.expert.kernel import Kernel
from agents.expert.templates import next_pow2
from agents.expert.templates.matmul_epilogue import batch_env, bind_output, store_outputs
from agents.expert.templates.matmul_operands import dot_form
from agents.expert.writer import Writer


@dataclass
class ChainLines:
    """A chained GEMM's lines: ``init`` before the dot's K steps, ``step`` once per K step (the one tile's,
    or each pass block's over N), ``after`` its epilogue (whether the interpreter multiplies its tiles
    as fp32, so the kernel needs ``DOT_FP32``, is ``dot_form``'s to say)."""

    init: list[str]
    step: list[str]
    after: list[str]

    @property
    def lines(self) -> list[str]:
        return self.init + self.step + self.after


def chain_lines(kernel: Kernel, epilogue: Writer, ptrs: dict[str, str], benv: dict[Var, Affine], nmask: bool,
                mmask: bool, precision: str | None, wide: bool, cpu: bool, looped: bool = False,
                online: tuple[str, str] | None = None) -> ChainLines:
    """The chained GEMM's lines after the first GEMM's epilogue ``epilogue`` (its values bound there,
    in its current scope): the second dot on the tile and the second GEMM's stores. ``looped``: the
    first GEMM's row takes passes over N (``templates/matmul_rows.py``) and this is a pass's block at
    ``n0``: the dot accumulates over the blocks. ``online``: (exp terms, rescale) of an online softmax in
    the same pass (flash attention): the dot sums the terms' products and the accumulator is rescaled
    with the row's sum (the caller divides it by the sum after the pass, before ``after``)."""
    mm, a = kernel.chained
    cast = ".to(tl.int64)" if wide else ""
    block_d = max(16, next_pow2(mm.n))
    dmask = mm.n % block_d != 0
    dot_dtype, fp32_switch, exact = dot_form(mm, precision)
    init = [f"# the chained GEMM on this tile ({mm.aten}: K = the first GEMM's {mm.k} columns, in registers)",
            f"rd = tl.arange(0, {block_d})[None, :]{cast}"]
    init += [f"dmask = rd < {mm.n}"] if dmask else []
    init += [f"acc2 = tl.zeros((BLOCK_M, {block_d}), dtype=tl.float32)"] if looped else []
    step = [f"rk2 = (n0 + tl.arange(0, BLOCK_N))[:, None]{cast}" if looped else
            f"rk2 = tl.arange(0, BLOCK_N)[:, None]{cast}"]
    step += [f"kmask2 = rk2 < {mm.k}"] if nmask else []
    # A: the first GEMM's epilogue value on its [BLOCK_M, BLOCK_N] tile; the lanes past N are zeroed
    value = online[0] if online else epilogue.value(substitute(a, benv))  # (its lines go on the epilogue's)
    p = f"tl.where(nmask, {value}, 0.0)" if nmask else value
    step += [f"acc2 = acc2 * {online[1]}  # the terms summed so far, onto this block's running max"] if online else []
    bvars = batch_env(mm)
    # B: [BLOCK_N, BLOCK_D] rows k of the second operand (every program reads it whole)
    b_writer = Writer(ptrs, {mm.kvar.name: "rk2", mm.nvar.name: "rd", "pid_b": "pid_b"},
                      {**({"r": "kmask2"} if nmask else {}), **({"x": "dmask"} if dmask else {})},
                      {mm.kvar.name: "r", mm.nvar.name: "x", "pid_b": "b"}, wide, prefix="c_", cpu=cpu)
    b = b_writer.value(substitute(mm.b, bvars))
    step += b_writer.lines
    tl_dtype = TL[dot_dtype]
    step += [f"p2 = ({p}).to({tl_dtype})", f"b2 = ({b}).to({tl_dtype})"]
    into = ", acc2" if looped else ""
    if fp32_switch:
        step += ["if DOT_FP32:  # the CPU interpreter multiplies bf16 wrongly: exact fp32 products instead",
                 f"    acc2 = tl.dot(p2.to(tl.float32), b2.to(tl.float32){into})",
                 "else:", f"    acc2 = tl.dot(p2, b2{into})"]
    else:
        step.append(f"acc2 = tl.dot(p2, b2{into}{exact})")
    # the second GEMM's epilogue over [BLOCK_M, BLOCK_D]: alpha, bias, its pointwise consumers, stores
    out = Writer(ptrs, {mm.mvar.name: "rm", mm.nvar.name: "rd", "pid_b": "pid_b"},
                 {**({"x": "mmask"} if mmask else {}), **({"r": "dmask"} if dmask else {})},
                 {mm.mvar.name: "x", mm.nvar.name: "r", "pid_b": "b"}, wide, prefix="d_", cpu=cpu)
    bind_output(out, mm, "acc2", bvars)
    store_outputs(out, [s for s in kernel.stores if s.role.startswith("chain")], bvars)
    return ChainLines(init, step, out.lines)


def chain_block_m(block_m: int, block_n: int, n2: int, warps: int, per_thread: int) -> int:
    """BLOCK_M for a chained kernel: halved (not below 64, a warpgroup's MMA rows) while the two fp32
    accumulators, [BLOCK_M, BLOCK_N] and [BLOCK_M, BLOCK_D], pass ``per_thread`` elements a thread
    (the pack's ``chain-accumulators-per-thread``): past it the kernel spills."""
    width = block_n + max(16, next_pow2(n2))
    while block_m > 64 and block_m * width > per_thread * 32 * warps:
        block_m //= 2
    return block_m


def describe_chain(kernel: Kernel) -> str:
    if kernel.chained is None:
        return ""
    mm: Any = kernel.chained[0]
    return f", then {mm.aten.split('.')[-1]} [{mm.k} x {mm.n}] chained on the tile (its A operand never written)"
