"""Outputs judged against an exact run of the reference: "as accurate as eager" (the fp32 route).

A bf16 or fp16 computation rounds at every op, and two correct orders of the same arithmetic can
land a few ulps apart. Compared only with eager's own bf16 output, a candidate exactly as accurate
as eager can fail ``atol = rtol = 1e-2`` on a handful of elements near a binade edge (measured on
transformers' LlamaDecoderLayer on an H200, 2026-12-01: 1 of 16.7M elements, while candidate and
eager had the same mean error against fp32 to four digits). So when a low-precision output fails
against eager, the judge, and only the judge, runs the reference again in fp32 on the same values
and accepts the output when both hold:

1. its elements outside the tolerance of the fp32 result are no more than eager's (times ``SLACK``,
   plus three standard deviations of a count: :func:`tail_allowance`), and none is further from
   the fp32 result than the tolerance plus eager's worst error; and
2. the candidate's mean absolute error against the fp32 result is at most ``SLACK`` times eager's.

So a candidate passes this route when it is as accurate as eager in count, worst and mean. Where
eager is within the tolerance of the fp32 result everywhere, condition 1 holds every element of the
candidate to the tolerance, as it always did. Where eager is not, its misses are the yardstick: a
rounding flip inside the computation is amplified by what follows it (one bf16 probability of an
attention rounded the other way, one ulp of 0.004, times a value of 3 moved an output 0.0117 from
eager's: H100, 2026-12-07, ``softmax(q @ k.mT * 0.1) @ v`` at 197 x 80, 1 of 1.5M elements), and
eager itself misses the fp32 result there by up to 0.06 on 0.8% of the outputs (its bf16 scores).
A band of the tolerance alone rejected every such candidate, however accurate (its mean error
equalled eager's to four digits): on a CPU emulation of the same roundings in another order
(``benchmarks/attention_flip_probe.py``) 21 of 200 input sets missed eager, and a band widened only
by eager's error at the same element still rejected one of them, while every timed call is checked.

The second condition is what keeps a candidate from trading accuracy for speed: one that is sloppier
than eager on average (a biased or noisy result that still sits inside the tolerance band) fails.
A reference whose fp32 run is no more accurate than its bf16 run (it casts back internally) gives
eager an error near zero, so nothing passes by this route. ``--match-eager`` turns the route off.

**fp32 outputs of a TF32 reference.** Under PyTorch's default flags cuDNN runs fp32 convolutions in
TF32 (10-bit mantissas), so eager's fp32 output is itself ~1e-3 off the exact result, and which
elements land where depends on the algorithm cuDNN picks for the layout. A candidate that runs the
same convolution on channels-last tensors (what torch.compile does) missed eager by up to 2.6e-4 on
0.7% of KernelBench level 2 #71's elements (H200, 2026-12-03), against a 1e-4 tolerance. The exact
run is therefore made with TF32 off, and where the evaluation's flags allow TF32 on a GPU, an fp32
output is judged against it like a 16-bit one, with "eager's error" taken as the larger of eager's
own and that of a TF32 emulation of the reference (:class:`TF32Emulation`: convolution and, if
allowed, matmul operands rounded to TF32). The flag, not the algorithm cuDNN picked, says what the
user accepted: on the H200, eager's NCHW convolution of KernelBench level 2 #71 used no TF32 (its
error against the exact run was 0), while cuDNN's channels-last kernel, torch.compile's choice too,
did. Condition 2 keeps its 1.05 slack over that error, so a candidate that computes in bf16 or
fp16 under an fp32 problem (~8x TF32's error) fails.

**fp32 outputs, with or without TF32: the exact run is fp64.** An fp32 result is not exact either:
a long sum rounds at every add, and two correct orders of it differ where terms cancel. On the
H200 (2026-12-03) a Triton matrix-vector product over K = 65536 (blocked partial sums, then a tree)
missed cuBLAS's fp32 output by 2.4e-4 on 1 of 1024 elements whose value (0.083) had cancelled from
terms of order 1, against a band of 1.08e-4 there; both were ~1e-5 relative to the terms. So an
fp32 output that misses eager is judged against the reference run in fp64 (the fp16/bf16 leaves of
the same output too). Its allowance, worst and mean (:func:`_allowance`), is the larger of eager's
own error and TF32's (as above) and :data:`SLACK_FP32` times the error of the reference run in fp32
with TF32 off, the rounding any fp32 order of the arithmetic has: summation order alone moves it
by a factor of a few (on a CPU, K = 65536: MKL's matrix-vector product 4.6e-4, blocked sums of 1024
lanes 3.9e-5, a sequential loop 8.7e-4; on the H200, 64-term lanes then a tree 1.4x cuBLAS's mean and
1.6x its worst), while any arithmetic below fp32 costs orders of magnitude (TF32 operands 0.06,
bf16 operands 0.47 on the same products), so a candidate that buys speed with precision still
fails. A problem that sets an fp32 tolerance tighter than the default (``TOLERANCE = 1e-12``:
"match eager") is judged against the fp32 run with no fp32-rounding allowance, as before. A
reference that casts to fp32 internally gains nothing from the fp64 run there, and eager's error
stays its fp32 one; one with no fp64 form is judged against its fp32 run (the judge says so:
:meth:`egg.evaluate.judge.Evaluation.fp32_route`).
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator
from typing import Any

import torch
from pydantic import BaseModel
from torch.utils._python_dispatch import TorchDispatchMode

from egg.evaluate.correctness import compare_outputs, leaves, map_tensors
from egg.tolerance import DEFAULT_TOLERANCES, Tolerance, tolerance_for

SLACK = 1.05  # fp16/bf16: mean error may exceed eager's by 5%: two equally accurate orders differ by noise
SLACK_FP32 = 4.0  # fp32 against fp64: summation orders differ by a few x, lower precision by 100x+ (docstring)
LOW_PRECISION = (torch.float16, torch.bfloat16)
_CHUNK = 1 << 24


class Anchored(BaseModel):
    ok: bool
    reason: str | None = None  # why the route does not accept (None when it does)
    note: str = ""  # what was measured, for the trial's detail and the verdict's notes


@contextlib.contextmanager
def tf32_off() -> Iterator[None]:
    """PyTorch's TF32 flags off for the exact run (restored after it)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


_CONV = ("aten.convolution.default", "aten.convolution_overrideable.default")
_MATMUL = ("aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.baddbmm.default")


def tf32_round(t: torch.Tensor) -> torch.Tensor:
    """``t`` (fp32) rounded to TF32's 10-bit mantissa, kept in fp32: what a tensor core multiplies."""
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


class TF32Emulation(TorchDispatchMode):
    """Runs convolutions (``convs``) and matmuls (``matmuls``) on TF32-rounded fp32 operands, with
    exact fp32 arithmetic otherwise: the accuracy the TF32 flags allow, whichever algorithm cuDNN or
    cuBLAS happens to pick for the reference (on the H200, cuDNN's NCHW kernel for KernelBench
    level 2 #71 used none, its NHWC kernel did)."""

    def __init__(self, convs: bool, matmuls: bool) -> None:
        super().__init__()
        self.ops = (_CONV if convs else ()) + (_MATMUL if matmuls else ())

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if str(func) in self.ops:
            args = tuple(tf32_round(a) if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a
                         for a in args)
        return func(*args, **(kwargs or {}))


def exact_model(model: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    """A private copy of the reference model in ``dtype`` (fp32 or fp64: floating parameters and
    buffers converted)."""
    return copy.deepcopy(model).to(dtype)


def upcast(tree: Any, dtype: torch.dtype = torch.float32) -> Any:
    """Inputs for the exact run: floating tensors narrower than ``dtype`` as ``dtype`` copies,
    everything else as it is."""
    def one(t: torch.Tensor) -> torch.Tensor:
        narrower = t.is_floating_point() and torch.finfo(t.dtype).bits < torch.finfo(dtype).bits
        return t.to(dtype) if narrower else t.clone()
    return map_tensors(tree, one)


def exact_dtype(expected: Any, tolerances: dict[str, Tolerance]) -> torch.dtype:
    """fp64 when an output leaf is fp32 (its exact run must be wider than it), else fp32; fp32 too
    when the problem asks for closer fp32 agreement than the default (the module docstring)."""
    fp32_out = any(isinstance(t, torch.Tensor) and t.dtype == torch.float32 for _, t in leaves(expected))
    tol, default = tolerance_for("float32", tolerances), DEFAULT_TOLERANCES["float32"]
    return torch.float64 if fp32_out and tol.atol >= default.atol and tol.rtol >= default.rtol else torch.float32


def _errors(exact: torch.Tensor, out: torch.Tensor, tol: Tolerance,
            plain: Tolerance | None = None) -> tuple[int, float, float, int]:
    """(elements outside ``tol``, sum of absolute errors, max abs error, elements outside ``plain``:
    0 without it) of ``out`` against ``exact``, in one pass over the output."""
    flat_x, flat_o = exact.reshape(-1), out.reshape(-1)
    over, total, worst, tail = 0, 0.0, 0.0, 0
    for start in range(0, flat_x.numel(), _CHUNK):  # in fp64: an fp64 exact run is not rounded first
        x = flat_x[start:start + _CHUNK].double()
        err = (flat_o[start:start + _CHUNK].double() - x).abs()
        over += int((err > tol.atol + tol.rtol * x.abs()).sum())
        if plain is not None:
            tail += int((err > plain.atol + plain.rtol * x.abs()).sum())
        total += float(err.sum())
        worst = max(worst, float(err.max()))
    return over, total, worst, tail


def tail_allowance(eager_over: int) -> int:
    """Elements a candidate may have outside the tolerance of the exact result, where eager has
    ``eager_over``: ``SLACK`` times as many, plus three standard deviations of a count (sqrt n), since
    which elements land outside moves with the order of the arithmetic. None where eager has none."""
    return math.floor(SLACK * eager_over + 3 * math.sqrt(eager_over))


def _allowance(x: torch.Tensor, r: torch.Tensor, tol: Tolerance, tf32: Any, fp32: Any) -> tuple[float, float, str]:
    """(mean, worst) absolute error against ``x`` an fp32 output may have, and how they were set:
    the larger of eager's own and a TF32 emulation's (mean x SLACK), and SLACK_FP32 x that of the
    reference's fp32 run without TF32 (the rounding any fp32 order of the arithmetic has)."""
    n = max(r.numel(), 1)
    _, own_sum, own_max, _ = _errors(x, r, tol)
    mean, worst, parts = SLACK * own_sum / n, own_max, [f"eager mean {own_sum / n:.3g}, max {own_max:.3g}"]
    if isinstance(tf32, torch.Tensor) and tf32.shape == r.shape:
        _, t_sum, t_max, _ = _errors(x, tf32, tol)
        mean, worst = max(mean, SLACK * t_sum / n), max(worst, t_max)
        parts.append(f"TF32 emulation mean {t_sum / n:.3g}, max {t_max:.3g}")
    if x.dtype != torch.float64:  # against an fp32 run (see exact_dtype) fp32 rounding is not measured
        return mean, worst, "; ".join(parts)
    level = fp32 if isinstance(fp32, torch.Tensor) and fp32.shape == r.shape else r
    _, f_sum, f_max, _ = _errors(x, level, tol)
    mean, worst = max(mean, SLACK_FP32 * f_sum / n), max(worst, SLACK_FP32 * f_max)
    parts.append(f"{SLACK_FP32:g}x fp32 rounding mean {f_sum / n:.3g}, max {f_max:.3g}")
    return mean, worst, "; ".join(parts)


def judge_against_exact(expected: Any, got: Any, exact: Any, tolerances: dict[str, Tolerance],
                        tf32: Any = None, fp32: Any = None) -> Anchored:
    """Does every fp16/bf16/fp32 leaf of ``got`` meet conditions 1 and 2 against ``exact`` (the
    reference in fp64 where it has fp32 outputs, :func:`exact_dtype`), and every other leaf match
    eager's ``expected`` as the plain comparison requires? An fp32 leaf's allowance
    (:func:`_allowance`) uses ``tf32`` (the reference under :class:`TF32Emulation`, where the flags
    allow TF32) and ``fp32`` (the reference in fp32 with TF32 off; None: eager stands for it)."""
    routed = LOW_PRECISION + (torch.float32,)
    tf32_leaves = dict(leaves(tf32)) if tf32 is not None else {}
    fp32_leaves = dict(leaves(fp32)) if fp32 is not None else {}
    ref_leaves, got_leaves, exact_leaves = leaves(expected), leaves(got), leaves(exact)
    if not len(ref_leaves) == len(got_leaves) == len(exact_leaves):
        return Anchored(ok=False, reason="the exact run's output structure differs from the reference's")
    notes = []
    for (name, r), (_, o), (_, x) in zip(ref_leaves, got_leaves, exact_leaves):
        if not isinstance(r, torch.Tensor) or r.dtype not in routed:
            plain = compare_outputs(r, o, tolerances)  # other leaves must match eager as before
            if not plain.ok:
                why = (plain.reason or "").removeprefix("output: ")  # the leaf was compared on its own
                return Anchored(ok=False, reason=f"{name}: {why} (only fp16/bf16/fp32 outputs have an exact route)")
            continue
        if not isinstance(o, torch.Tensor) or o.shape != r.shape or o.dtype != r.dtype:
            return Anchored(ok=False, reason=f"{name}: not a tensor of the reference's shape and dtype")
        if not isinstance(x, torch.Tensor) or x.shape != r.shape or not x.is_floating_point():
            return Anchored(ok=False, reason=f"{name}: the exact run gave no tensor of the reference's shape")
        if not (bool(torch.isfinite(x).all()) and bool(torch.isfinite(r).all()) and bool(torch.isfinite(o).all())):
            return Anchored(ok=False, reason=f"{name}: non-finite values (the exact route compares finite outputs only)")
        tol = tolerance_for(str(r.dtype).removeprefix("torch."), tolerances)
        n = max(r.numel(), 1)
        plain, own_over = tol, 0
        tail_allowed: int | None = None  # fp32 outputs: no count of eager's misses
        if r.dtype == torch.float32:  # eager's rounding, TF32's where allowed, fp32's: inside the band
            mean_allowed, worst_allowed, how = _allowance(x, r, tol, tf32_leaves.get(name), fp32_leaves.get(name))
            tol, label = Tolerance(atol=tol.atol + worst_allowed, rtol=tol.rtol), f"allowed; {how}"
        else:  # eager's misses of the exact result are the yardstick (docstring, condition 1)
            own_over, own_sum, own_max, _ = _errors(x, r, tol)
            mean_allowed, tail_allowed = SLACK * own_sum / n, tail_allowance(own_over)
            tol = Tolerance(atol=tol.atol + own_max, rtol=tol.rtol)
            label = (f"eager mean {own_sum / n:.3g} x {SLACK:g}, max {own_max:.3g}, "
                     f"{own_over} elements outside atol={plain.atol:g} rtol={plain.rtol:g}")
        over, cand_sum, cand_max, tail = _errors(x, o, tol, plain if tail_allowed is not None else None)
        run = "an fp64" if x.dtype == torch.float64 else "an fp32"
        measured = (f"{name} against {run} run: mean abs err {cand_sum / n:.3g} (allowed {mean_allowed:.3g}), "
                    f"max {cand_max:.3g} (band atol {tol.atol:.3g}) [{label}]")
        if over:
            return Anchored(ok=False, reason=f"{measured}; {over} of {r.numel()} elements outside "
                            f"atol={tol.atol:g} rtol={tol.rtol:g} of the exact result")
        if tail_allowed is not None and tail > tail_allowed:
            return Anchored(ok=False, reason=f"{measured}; {tail} elements outside atol={plain.atol:g} "
                            f"rtol={plain.rtol:g} of the exact result, eager {own_over} (allowed {tail_allowed})")
        if cand_sum / n > mean_allowed:
            return Anchored(ok=False, reason=f"{measured}: less accurate than eager (mean error above the allowed)")
        notes.append(measured)
    if not notes:
        return Anchored(ok=False, reason="no fp16/bf16/fp32 output to judge against an exact run")
    return Anchored(ok=True, note="; ".join(notes))
