"""Layer norm and RMS norm over the trailing dimensions, statistics in fp32.

Why: a norm is a reduction followed by an elementwise epilogue; fused, it reads the row once (when
the row fits in registers) and writes it once. When the row is too long for registers the looped
kernel makes two sweeps: statistics (Welford-style merging of per-chunk mean and M2, which avoids
the catastrophic cancellation of ``E[x^2] - E[x]^2``), then normalise-and-write. The second sweep
mostly hits L2 for rows of a few MB (H200: 60 MB L2).

Launcher ``norm(x, weight=None, bias=None, *, eps=1e-5, kind="layer", normalized_ndim=1,
BLOCK_N=None, num_warps=None)``. Parameters:

- ``x``: input tensor; normalised over its last ``normalized_ndim`` dimensions.
- ``weight``, ``bias``: optional affine parameters with the normalised dims' shape (``bias`` is
  ignored for ``kind="rms"``).
- ``eps`` (float, default 1e-5): added to the variance (layer) or mean square (rms).
- ``kind`` (str, default "layer"): "layer" (subtract mean, divide by std) or "rms" (divide by root
  mean square, no centring).
- ``normalized_ndim`` (int, default 1): how many trailing dims form one row (LayerNorm's
  ``normalized_shape`` length).
- ``BLOCK_N`` (int, constexpr, default None): columns per chunk; None picks
  ``next_power_of_2(row)`` up to ``MAX_ONE_PASS_N`` (one pass), else 4096 (two sweeps).
- ``num_warps`` (int, default None): None scales with ``BLOCK_N`` (4, 8 or 16).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

MAX_ONE_PASS_N = 8192


@triton.jit
def _norm_one_pass_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps,
    IS_RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    if IS_RMS:
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        y = x * rstd
    else:
        mean = tl.sum(x, axis=0) / n_cols
        xc = tl.where(mask, x - mean, 0.0)  # padding must not add (0 - mean)^2 to the variance
        rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
        y = xc * rstd
    if HAS_W:
        y = y * tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_B:
        y = y + tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _norm_looped_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps,
    IS_RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    cols = tl.arange(0, BLOCK_N)
    # sweep 1: merge per-chunk (count, mean, M2) with Chan's formula; for RMS only sum(x^2) matters
    count = 0.0
    mean = 0.0
    m2 = 0.0
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        if IS_RMS:
            m2 += tl.sum(x * x, axis=0)
        else:
            n_b = tl.sum(mask.to(tl.float32), axis=0)
            mean_b = tl.sum(x, axis=0) / n_b
            xc = tl.where(mask, x - mean_b, 0.0)
            m2_b = tl.sum(xc * xc, axis=0)
            total = count + n_b
            delta = mean_b - mean
            mean += delta * n_b / total
            m2 += m2_b + delta * delta * count * n_b / total
            count = total
    if IS_RMS:
        mean = 0.0
    rstd = 1.0 / tl.sqrt(m2 / n_cols + eps)
    # sweep 2: normalise and write; the row was just read, so this read mostly hits L2
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        y = (x - mean) * rstd
        if HAS_W:
            y = y * tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        if HAS_B:
            y = y + tl.load(b_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * n_cols + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
    kind: str = "layer",
    normalized_ndim: int = 1,
    BLOCK_N: int | None = None,
    num_warps: int | None = None,
) -> torch.Tensor:
    if kind not in ("layer", "rms"):
        raise ValueError(f"kind must be 'layer' or 'rms', got {kind!r}")
    shape = x.shape
    n_cols = math.prod(shape[x.dim() - normalized_ndim:])
    x2 = x.contiguous().reshape(-1, n_cols)
    out = torch.empty_like(x2)
    if out.numel() == 0:
        return out.reshape(shape)
    w = weight.contiguous().reshape(-1) if weight is not None else None
    b = bias.contiguous().reshape(-1) if (bias is not None and kind == "layer") else None
    for name, t in (("weight", w), ("bias", b)):
        if t is not None and t.numel() != n_cols:
            raise ValueError(f"{name} must have {n_cols} elements, got {t.numel()}")
    if BLOCK_N is None:
        p2 = triton.next_power_of_2(n_cols)
        BLOCK_N = p2 if p2 <= MAX_ONE_PASS_N else 4096
    warps = num_warps or (4 if BLOCK_N <= 1024 else 8 if BLOCK_N <= 4096 else 16)
    kernel = _norm_one_pass_kernel if BLOCK_N >= n_cols else _norm_looped_kernel
    kernel[(x2.shape[0],)](
        x2, w if w is not None else x2, b if b is not None else x2, out, n_cols, eps,
        IS_RMS=kind == "rms", HAS_W=w is not None, HAS_B=b is not None, BLOCK_N=BLOCK_N, num_warps=warps,
    )
    return out.reshape(shape)
