"""Row softmax over the last dimension: one pass when the row fits, online softmax when it doesn't.

Why: softmax is memory-bound. When a whole row fits in one program's registers (``BLOCK_N >=
n_cols``) the kernel reads the row once and writes it once: max, exp, sum and divide all happen in
registers. When it does not fit, the online-softmax kernel keeps a running maximum and a running
sum rescaled by ``exp(m_old - m_new)`` so statistics need one sweep over the row, then a second
sweep writes the output: two reads and one write, instead of the three reads of max-pass,
sum-pass, write-pass. Statistics are fp32 whatever the input dtype.

Launcher ``row_softmax(x, *, BLOCK_N=None, num_warps=None, eviction_policy="")``. Parameters:

- ``x``: input tensor; softmax is taken over the last dimension (move the dim there first).
- ``BLOCK_N`` (int, constexpr, default None): columns per chunk, a power of two. None picks
  ``next_power_of_2(n_cols)`` up to ``MAX_ONE_PASS_N`` (one pass), else 4096 (online).
- ``num_warps`` (int, default None): warps per program; None scales with ``BLOCK_N``
  (4 up to 1024 columns, 8 up to 4096, 16 beyond).
- ``eviction_policy`` (str, default ""): cache hint for the first read in the online kernel;
  "evict_last" keeps the row in L2 for the second sweep (useful when a row is larger than what
  stays resident by default).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

MAX_ONE_PASS_N = 8192  # fp32 row in registers: 8192 / (16 warps * 32 lanes) = 16 values per thread


@triton.jit
def _softmax_one_pass_kernel(x_ptr, out_ptr, n_cols, x_stride, out_stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    # -inf in the padding: it neither wins the max nor adds to the sum (exp(-inf) = 0)
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_online_kernel(
    x_ptr, out_ptr, n_cols, x_stride, out_stride, BLOCK_N: tl.constexpr, EVICTION: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    cols = tl.arange(0, BLOCK_N)
    m = float("-inf")
    l = 0.0
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"), eviction_policy=EVICTION)
        x = x.to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        # rescale what was summed under the old maximum; the first chunk always has a real value,
        # so m_new is finite unless the whole row is -inf (torch gives nan there too)
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    inv_l = 1.0 / l
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"), eviction_policy="evict_first")
        y = tl.exp(x.to(tl.float32) - m) * inv_l
        tl.store(out_ptr + row * out_stride + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def _default_warps(block_n: int) -> int:
    return 4 if block_n <= 1024 else 8 if block_n <= 4096 else 16


def row_softmax(
    x: torch.Tensor,
    *,
    BLOCK_N: int | None = None,
    num_warps: int | None = None,
    eviction_policy: str = "",
) -> torch.Tensor:
    shape = x.shape
    n_cols = shape[-1]
    x2 = x.reshape(-1, n_cols)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    out = torch.empty((x2.shape[0], n_cols), dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out.reshape(shape)
    if BLOCK_N is None:
        p2 = triton.next_power_of_2(n_cols)
        BLOCK_N = p2 if p2 <= MAX_ONE_PASS_N else 4096
    warps = num_warps or _default_warps(BLOCK_N)
    grid = (x2.shape[0],)
    if BLOCK_N >= n_cols:
        _softmax_one_pass_kernel[grid](x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK_N=BLOCK_N,
                                       num_warps=warps)
    else:
        _softmax_online_kernel[grid](x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK_N=BLOCK_N,
                                     EVICTION=eviction_policy, num_warps=warps)
    return out.reshape(shape)
