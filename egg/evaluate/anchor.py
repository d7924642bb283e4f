"""Low-precision outputs judged against an exact fp32 run of the reference: "as accurate as eager".

A bf16 or fp16 computation rounds at every op, and two correct orders of the same arithmetic can
land a few ulps apart. Compared only with eager's own bf16 output, a candidate exactly as accurate
as eager can fail ``atol = rtol = 1e-2`` on a handful of elements near a binade edge (measured on
transformers' LlamaDecoderLayer on an H200, 2026-12-01: 1 of 16.7M elements, while candidate and
eager had the same mean error against fp32 to four digits). So when a low-precision output fails
against eager, the judge, and only the judge, runs the reference again in fp32 on the same values
and accepts the output when both hold:

1. every element is within the same tolerance of the fp32 result; and
2. the candidate's mean absolute error against the fp32 result is at most ``SLACK`` times eager's.

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
output is judged against it like a 16-bit one, with condition 1's band widened by eager's own worst
error (eager is the accuracy the user accepted by leaving the flag on); condition 2 is unchanged,
so a candidate that computes in bf16 or fp16 under an fp32 problem, ~8x eager's TF32 error, fails.
Without TF32 in the reference (a CPU, ``--strict-fp32``, no convolution), eager's error against
the exact run is about zero, and again nothing passes by this route.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import torch
from pydantic import BaseModel

from egg.evaluate.correctness import compare_outputs, leaves, map_tensors
from egg.tolerance import Tolerance, tolerance_for

SLACK = 1.05  # mean error may exceed eager's by 5%: two equally accurate orders differ by noise
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


def fp32_model(model: torch.nn.Module) -> torch.nn.Module:
    """A private fp32 copy of the reference model (floating parameters and buffers upcast)."""
    return copy.deepcopy(model).float()


def upcast(tree: Any) -> Any:
    """Inputs for the fp32 run: fp16/bf16 tensors as fp32 copies, everything else as it is."""
    return map_tensors(tree, lambda t: t.float() if t.dtype in LOW_PRECISION else t.clone())


def _errors(exact: torch.Tensor, out: torch.Tensor, tol: Tolerance) -> tuple[int, float, float]:
    """(elements outside tolerance, sum of absolute errors, max abs error) of ``out`` against ``exact``."""
    flat_x, flat_o = exact.reshape(-1), out.reshape(-1)
    over, total, worst = 0, 0.0, 0.0
    for start in range(0, flat_x.numel(), _CHUNK):
        x = flat_x[start:start + _CHUNK].float()
        err = (flat_o[start:start + _CHUNK].float() - x).abs()
        over += int((err > tol.atol + tol.rtol * x.abs()).sum())
        total += float(err.double().sum())
        worst = max(worst, float(err.max()))
    return over, total, worst


def judge_against_fp32(expected: Any, got: Any, exact: Any, tolerances: dict[str, Tolerance],
                       tf32: bool = False) -> Anchored:
    """Does every fp16/bf16 leaf of ``got`` (and, when the reference ran with ``tf32`` allowed, every
    fp32 leaf, with the band widened by eager's worst error) meet conditions 1 and 2 against
    ``exact``, and every other leaf match eager's ``expected`` as the plain comparison requires?"""
    routed = LOW_PRECISION + ((torch.float32,) if tf32 else ())
    ref_leaves, got_leaves, exact_leaves = leaves(expected), leaves(got), leaves(exact)
    if not len(ref_leaves) == len(got_leaves) == len(exact_leaves):
        return Anchored(ok=False, reason="the fp32 run's output structure differs from the reference's")
    notes = []
    for (name, r), (_, o), (_, x) in zip(ref_leaves, got_leaves, exact_leaves):
        if not isinstance(r, torch.Tensor) or r.dtype not in routed:
            plain = compare_outputs(r, o, tolerances)  # other leaves must match eager as before
            if not plain.ok:
                why = (plain.reason or "").removeprefix("output: ")  # the leaf was compared on its own
                which = "fp16/bf16 and TF32-computed fp32" if tf32 else "fp16/bf16"
                return Anchored(ok=False, reason=f"{name}: {why} (only {which} outputs have an fp32 route)")
            continue
        if not isinstance(o, torch.Tensor) or o.shape != r.shape or o.dtype != r.dtype:
            return Anchored(ok=False, reason=f"{name}: not a tensor of the reference's shape and dtype")
        if not isinstance(x, torch.Tensor) or x.shape != r.shape or not x.is_floating_point():
            return Anchored(ok=False, reason=f"{name}: the fp32 run gave no tensor of the reference's shape")
        if not (bool(torch.isfinite(x).all()) and bool(torch.isfinite(r).all()) and bool(torch.isfinite(o).all())):
            return Anchored(ok=False, reason=f"{name}: non-finite values (the fp32 route compares finite outputs only)")
        tol = tolerance_for(str(r.dtype).removeprefix("torch."), tolerances)
        _, eager_sum, eager_max = _errors(x, r, tol)
        if r.dtype == torch.float32:  # a TF32 reference: eager's own worst error is inside the band
            tol = Tolerance(atol=tol.atol + eager_max, rtol=tol.rtol)
        over, cand_sum, cand_max = _errors(x, o, tol)
        n = max(r.numel(), 1)
        cand_mean, eager_mean = cand_sum / n, eager_sum / n
        measured = (f"{name} against an fp32 run: mean abs err {cand_mean:.3g} (eager {eager_mean:.3g}), "
                    f"max {cand_max:.3g} (eager {eager_max:.3g})")
        if over:
            return Anchored(ok=False, reason=f"{measured}; {over} of {r.numel()} elements outside "
                            f"atol={tol.atol:g} rtol={tol.rtol:g} of the fp32 result")
        if cand_mean > SLACK * eager_mean:
            return Anchored(ok=False, reason=f"{measured}: less accurate than eager (more than {SLACK:g}x its "
                            "mean error)")
        notes.append(measured)
    if not notes:
        return Anchored(ok=False, reason="no fp16/bf16 (or TF32-computed fp32) output to judge against an fp32 run")
    return Anchored(ok=True, note="; ".join(notes))
