"""Helpers the generated kernels and launchers call (``_egg_*``), pasted into a candidate once:
``@triton.jit`` math helpers, and the launchers' host-side ``_egg_aligned`` (the direct launch path).

Triton 3.6 has no tanh/expm1/log1p that also run in the CPU interpreter (libdevice does not), so
these are written out; each keeps fp32 relative precision near 0, where the naive formula
cancels. The reduction combiners propagate NaN as torch's max/min do, and break argmax ties by
the first index as torch does (the argmax/argmin combiners take a lane's elements in row order:
the looped reduction's update, whose ``rindex`` only grows, is their one caller).
"""

from __future__ import annotations

import re

def _nibble_calls() -> dict[str, str]:
    """_egg_nibble_half's four inline-PTX calls (low/high nibble, bf16/fp16): 4 bytes in ``$2``, the
    pairs ``base + n`` of bytes (0, 1) in ``$0`` and (2, 3) in ``$1``. ``prmt`` selector 0x4140 puts
    bytes 0 and 1 in the two 16-bit halves (0x4342: bytes 2 and 3), LOP3 0xEA is ``(a & b) | c``."""
    calls = {}
    for high in (False, True):
        src, regs, shift = ("t", "t, t0, t1", "shr.b32 t, $2, 4; ") if high else ("$2", "t0, t1", "")
        for dtype, bits in (("bf16", 0x43004300), ("f16", 0x64006400)):
            asm = (f"{{ .reg .b32 {regs}; {shift}prmt.b32 t0, {src}, 0, 0x4140; prmt.b32 t1, {src}, 0, 0x4342; "
                   f"lop3.b32 $0, t0, 0x000F000F, {bits:#010x}, 0xEA; lop3.b32 $1, t1, 0x000F000F, {bits:#010x}, 0xEA; }}")
            out = "tl.float16" if dtype == "f16" else "tl.bfloat16"
            calls[f"{'high' if high else 'low'}_{dtype}"] = \
                f'tl.inline_asm_elementwise("{asm}", "=r,=r,r", [q], dtype={out}, is_pure=True, pack=4)'
    return calls


HELPERS: dict[str, str] = {
    "_egg_tanh": '''
@triton.jit
def _egg_tanh(x):
    # tanh = (1 - e) / (1 + e) with e = exp(-2|x|): never overflows. Near 0 the subtraction
    # cancels, so a Taylor polynomial (error < 1e-9 relative below 0.0625) takes over.
    ax = tl.abs(x)
    e = tl.exp(-2.0 * ax)
    t = (1.0 - e) / (1.0 + e)
    x2 = ax * ax
    t = tl.where(ax < 0.0625, ax * (1.0 + x2 * (-0.3333333333333333 + x2 * 0.13333333333333333)), t)
    return tl.where(x < 0.0, -t, t)
''',
    "_egg_expm1": '''
@triton.jit
def _egg_expm1(x):
    # exp(x) - 1 cancels for small |x|: a degree-7 Taylor polynomial below 0.25 (error < 2e-9).
    p = x * (1.0 + x * (0.5 + x * (0.16666666666666666 + x * (0.041666666666666664 + x * (
        0.008333333333333333 + x * (0.001388888888888889 + x * 0.0001984126984126984))))))
    return tl.where(tl.abs(x) < 0.25, p, tl.exp(x) - 1.0)
''',
    "_egg_log1p": '''
@triton.jit
def _egg_log1p(x):
    # log(1 + x) loses x below ~1e-7: 2 * atanh(s), s = x / (2 + x), as a series for |x| < 0.25.
    s = x / (2.0 + x)
    s2 = s * s
    p = 2.0 * s * (1.0 + s2 * (0.3333333333333333 + s2 * (0.2 + s2 * (0.14285714285714285 + s2 * 0.1111111111111111))))
    return tl.where(tl.abs(x) < 0.25, p, tl.log(1.0 + x))
''',
    "_egg_softplus": '''
@triton.jit
def _egg_softplus(x, beta, threshold):
    # torch: x where beta * x > threshold (exp would overflow), else log1p(exp(beta * x)) / beta
    xb = x * beta
    return tl.where(xb > threshold, x, _egg_log1p(tl.exp(xb)) / beta)
''',
    "_egg_mish": '''
@triton.jit
def _egg_mish(x):
    # x * tanh(softplus(x)) = x * n / (n + 2) with n = e^x (e^x + 2) (tanh(log(1 + e)) is
    # ((1 + e)^2 - 1) / ((1 + e)^2 + 1)): one exp and one division, no cancellation (n > 0), where
    # tanh(log1p(exp(x))) took two exps, a log1p and a division; torch's threshold: x above 20.
    e = tl.exp(tl.minimum(x, 20.0))
    n = e * (e + 2.0)
    return tl.where(x > 20.0, x, x * (n / (n + 2.0)))
''',
    "_egg_round_tf32": '''
@triton.jit
def _egg_round_tf32(x):
    # fp32 rounded to TF32's 10-bit mantissa, to nearest (ties away), as cuDNN rounds (cvt.rna). A
    # tl.dot with input_precision="tf32" hands fp32 to the tensor cores, which drop the low 13 bits:
    # truncation, biased, 2.6x the mean error of a rounded TF32 convolution on the H200 (2026-12-03).
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
''',
    "_egg_exp2_ftz": '''
@triton.jit
def _egg_exp2_ftz(x, PTX: tl.constexpr):
    # 2**x of fp32 x as one MUFU.EX2 (ex2.approx.ftz, subnormal results flushed to 0). tl.exp's
    # ex2.approx.f32 keeps subnormal results, at a compare and two multiplies more around the MUFU
    # on sm_90 (SASS of cross-entropy's lane loop, 2026-12-06). For callers whose result cannot show a
    # subnormal: one added to a sum that is 0 or at least 1 (the online softmax's lane sums) rounds
    # away either way. The caller scales by log2(e), folding a sign into that constant (a negation
    # is a subtraction from 0 in Triton). Inline PTX: PTX (the launch's device is a CUDA GPU) or
    # tl.exp2 (the interpreter runs a GPU render on the CPU too).
    if PTX:
        return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)
    else:
        return tl.exp2(x)
''',
    "_egg_nibble_half": '''
@triton.jit
def _egg_nibble_half(q, HIGH: tl.constexpr, F16: tl.constexpr, PTX: tl.constexpr):
    # The low (or HIGH) nibble n of each byte of q (uint8 or int8) as the 16-bit float base + n
    # (bf16 128 + n, fp16 1024 + n: n OR-ed into base's significand); the caller subtracts base
    # less its offset, exactly. Triton converts a tensor element by element (a byte extract, a
    # 16-bit OR, a permute packing two results: 132 PRMT in the int4 GEMM's 340-instruction K step,
    # sm_90a SASS, 2026-12-06); the inline PTX takes 4 bytes a 32-bit register, spreads them into
    # two pairs with byte permutes and masks and ORs each pair in one LOP3 (a shift first for the
    # high nibbles): 4-5 instructions for 4 values. PTX: the launch's device is a CUDA GPU (the
    # interpreter, which runs GPU renders on the CPU too, and ROCm take the Triton form).
    if PTX:
        if HIGH:
            if F16:
                return {high_f16}
            else:
                return {high_bf16}
        else:
            if F16:
                return {low_f16}
            else:
                return {low_bf16}
    else:
        if HIGH:
            n = (q >> 4) & 15
        else:
            n = q & 15
        if F16:
            return (n.to(tl.int16) | 0x6400).to(tl.float16, bitcast=True)
        else:
            return (n.to(tl.int16) | 0x4300).to(tl.bfloat16, bitcast=True)
'''.format(**_nibble_calls()),
    "_egg_trunc": '''
@triton.jit
def _egg_trunc(x):
    return tl.where(x < 0.0, tl.ceil(x), tl.floor(x))
''',
    "_egg_round": '''
@triton.jit
def _egg_round(x):
    # torch.round rounds half to even. x - floor(x) is exact in fp32, so the tie test is exact.
    r = tl.floor(x)
    d = x - r
    odd = (r - 2.0 * tl.floor(r * 0.5)) != 0.0
    return tl.where((d > 0.5) | ((d == 0.5) & odd), r + 1.0, r)
''',
    "_egg_pow": '''
@triton.jit
def _egg_pow(x, e):
    # torch.pow: |x|**e through exp2/log2; odd integer exponents keep the sign of a negative base,
    # other exponents of a negative base are NaN; x**0 is 1 even for x = 0 or NaN.
    r = tl.exp2(e * tl.log2(tl.abs(x)))
    is_int = tl.floor(e) == e
    odd = is_int & ((e - 2.0 * tl.floor(e * 0.5)) != 0.0)
    r = tl.where((x < 0.0) & odd, -r, r)
    r = tl.where((x < 0.0) & (~is_int), float("nan"), r)
    return tl.where(e == 0.0, 1.0, r)
''',
    "_egg_truncdiv": '''
@triton.jit
def _egg_truncdiv(a, b):
    # C division of integers, written so that the interpreter (numpy: floor) and the GPU (C:
    # truncation) agree: both round non-negative operands the same way.
    q = tl.abs(a) // tl.abs(b)
    return tl.where((a < 0) != (b < 0), -q, q)
''',
    "_egg_floordiv": '''
@triton.jit
def _egg_floordiv(a, b):
    q = _egg_truncdiv(a, b)
    return tl.where(((q * b) != a) & ((a < 0) != (b < 0)), q - 1, q)
''',
    "_egg_max_nan": '''
@triton.jit
def _egg_max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
''',
    "_egg_min_nan": '''
@triton.jit
def _egg_min_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
''',
    "_egg_prod": '''
@triton.jit
def _egg_prod(a, b):
    return a * b
''',
    "_egg_argmax": '''
@triton.jit
def _egg_argmax(va, ia, vb, ib):
    # torch.argmax over a lane's elements in row order: b comes after every index a holds, unless a
    # is still empty (index rnumel > ib), so a tie keeps a; NaN counts as the largest, the first wins.
    # (The order-free combine, ties broken by index, cost ~2x the instructions an element: on
    # KernelBench level 1 #51 the loop issued ~25 a value, against ~2 ms of DRAM time for 8.6 GB.)
    take_b = (vb > va) | ((vb != vb) & (va == va)) | (ia > ib)
    return tl.where(take_b, vb, va), tl.where(take_b, ib, ia)
''',
    "_egg_argmin": '''
@triton.jit
def _egg_argmin(va, ia, vb, ib):
    # torch.argmin over a lane's elements in row order (see _egg_argmax)
    take_b = (vb < va) | ((vb != vb) & (va == va)) | (ia > ib)
    return tl.where(take_b, vb, va), tl.where(take_b, ib, ia)
''',
    "_egg_aligned": '''
def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True
''',
}
# helper -> helpers it calls (emitted before it)
_DEPS: dict[str, tuple[str, ...]] = {"_egg_softplus": ("_egg_log1p",), "_egg_floordiv": ("_egg_truncdiv",)}
_CALL = re.compile(r"\b(_egg_[a-z0-9_]+)\b")


def helper_source(text: str) -> str:
    """Definitions of every helper ``text`` uses, dependencies first."""
    ordered: list[str] = []

    def add(name: str) -> None:
        if name in ordered or name not in HELPERS:
            return
        for dep in _DEPS.get(name, ()):
            add(dep)
        ordered.append(name)

    for found in dict.fromkeys(_CALL.findall(text)):
        add(found)
    return "\n\n".join(HELPERS[n].strip() for n in ordered)
