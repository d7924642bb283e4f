"""Split-K matmul: ``out = ACT(a @ b + bias)`` with K split across programs, reduced without atomics.

Why: when M x N is small and K is large (a few output tiles, e.g. 64 x 64 tiles on a 132-SM
H200 for M = N = 256, K = 16384), a normal GEMM launches too few programs to fill the GPU and each
walks a very long K loop. Split-K gives each output tile ``SPLIT_K`` programs, each summing one
slice of K into an fp32 workspace; a second small kernel sums the slices in a fixed order and
applies the epilogue. A fixed-order sum (instead of ``tl.atomic_add``) keeps results bit-for-bit
reproducible; the price is one extra write+read of ``SPLIT_K x M x N`` fp32, which is small
exactly when split-K is worth it (small M x N). When M x N already gives several waves of tiles,
split-K only adds that traffic: use ``matmul_epilogue`` instead.

Launcher ``splitk_matmul(a, b, bias=None, *, activation="none", allow_tf32=False, SPLIT_K=4,
BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4, num_stages=3, REDUCE_BLOCK=1024)``. Parameters:

- ``a``: ``(M, K)`` tensor; ``b``: ``(K, N)`` tensor, any strides.
- ``bias``: optional ``(N,)`` tensor.
- ``activation`` (str, default "none"): none, relu, silu or sigmoid.
- ``allow_tf32`` (bool, default False): let fp32 inputs use TF32 (changes fp32 results > 1e-4).
- ``SPLIT_K`` (int, default 4): number of K slices (programs per output tile).
- ``BLOCK_M``, ``BLOCK_N``, ``BLOCK_K`` (int, constexpr, defaults 64, 64, 32): tile shape, >= 16.
- ``num_warps`` (int, default 4), ``num_stages`` (int, default 3): for the partial-product kernel.
- ``REDUCE_BLOCK`` (int, constexpr, default 1024): outputs per program of the reduction kernel.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _splitk_partial_kernel(
    a_ptr, b_ptr, ws_ptr, M, N, K, k_per_split,
    stride_am, stride_ak, stride_bk, stride_bn,
    INPUT_PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_start = pid_k * k_per_split  # k_per_split is a multiple of BLOCK_K
    k_end = tl.minimum(k_start + k_per_split, K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_end), other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn,
                    mask=(offs_k[:, None] < k_end) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    ws = ws_ptr + pid_k.to(tl.int64) * M * N + offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    tl.store(ws, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _splitk_reduce_kernel(
    ws_ptr, bias_ptr, out_ptr, M, N,
    SPLIT_K: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, REDUCE_BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * REDUCE_BLOCK + tl.arange(0, REDUCE_BLOCK)
    mask = offs < M * N
    acc = tl.zeros((REDUCE_BLOCK,), dtype=tl.float32)
    for s in range(SPLIT_K):  # fixed order: deterministic, unlike atomics
        acc += tl.load(ws_ptr + s * M * N + offs, mask=mask, other=0.0, eviction_policy="evict_first")
    if HAS_BIAS:
        acc += tl.load(bias_ptr + offs % N, mask=mask, other=0.0).to(tl.float32)
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "silu":
        acc = acc * tl.sigmoid(acc)
    elif ACTIVATION == "sigmoid":
        acc = tl.sigmoid(acc)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def splitk_matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    activation: str = "none",
    allow_tf32: bool = False,
    SPLIT_K: int = 4,
    BLOCK_M: int = 64,
    BLOCK_N: int = 64,
    BLOCK_K: int = 32,
    num_warps: int = 4,
    num_stages: int = 3,
    REDUCE_BLOCK: int = 1024,
) -> torch.Tensor:
    if activation not in ("none", "relu", "silu", "sigmoid"):
        raise ValueError(f"unsupported activation {activation!r}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"shapes {tuple(a.shape)} @ {tuple(b.shape)} do not match")
    M, K = a.shape
    N = b.shape[1]
    out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    if M == 0 or N == 0:
        return out
    k_per_split = triton.cdiv(triton.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    split_k = max(1, triton.cdiv(K, k_per_split))  # no empty slices when K is small
    ws = torch.empty((split_k, M, N), dtype=torch.float32, device=a.device)
    precision = "ieee" if (a.dtype == torch.float32 and not allow_tf32) else "tf32"
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), split_k)
    _splitk_partial_kernel[grid](
        a, b, ws, M, N, K, k_per_split, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        INPUT_PRECISION=precision, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        num_warps=num_warps, num_stages=num_stages,
    )
    _splitk_reduce_kernel[(triton.cdiv(M * N, REDUCE_BLOCK),)](
        ws, bias if bias is not None else ws, out, M, N,
        SPLIT_K=split_k, HAS_BIAS=bias is not None, ACTIVATION=activation, REDUCE_BLOCK=REDUCE_BLOCK,
    )
    return out
