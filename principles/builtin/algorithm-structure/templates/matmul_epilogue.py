"""Matmul with a fused epilogue: ``out = ACT(alpha * (a @ b) + bias) + residual``.

Why: a plain GEMM should stay a cuBLAS call (it reaches most of the ~790 TFLOP/s bf16 of an H200);
a Triton GEMM earns its place when it removes the epilogue's extra round trips through HBM (bias,
activation, scaling, residual add: each one otherwise re-reads and re-writes the M x N output).
The kernel accumulates in fp32, applies the epilogue in registers and stores once.

Tiles are ordered with a GROUP_M swizzle: consecutive programs walk down GROUP_M rows of tiles
before moving right, so the B tiles they share are still in L2. fp32 inputs use
``input_precision="ieee"`` unless ``allow_tf32=True``: TF32 changes fp32 results by more than 1e-4.

Launcher ``matmul_epilogue(a, b, bias=None, residual=None, *, alpha=1.0, activation="none",
allow_tf32=False, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3)``.
Parameters:

- ``a``: ``(..., K)`` tensor (leading dims are flattened into M, as in ``nn.Linear``).
- ``b``: ``(K, N)`` tensor, any strides (pass ``weight.t()`` for a Linear weight, no copy).
- ``bias``: optional ``(N,)`` tensor added before the activation.
- ``residual``: optional tensor of the output's shape added after the activation.
- ``alpha`` (float, default 1.0): scale of the product.
- ``activation`` (str, default "none"): none, relu, gelu_tanh, silu or sigmoid.
- ``allow_tf32`` (bool, default False): let fp32 inputs use TF32 tensor cores.
- ``BLOCK_M``, ``BLOCK_N``, ``BLOCK_K`` (int, constexpr, defaults 64, 64, 32): tile shape; each
  at least 16 (the tensor-core minimum for ``tl.dot``).
- ``GROUP_M`` (int, constexpr, default 8): rows of tiles per swizzle group; 1 disables it.
- ``num_warps`` (int, default 4), ``num_stages`` (int, default 3): warps per program and
  software-pipelining depth of the K loop.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

ACTIVATIONS = ("none", "relu", "gelu_tanh", "silu", "sigmoid")


@triton.jit
def _activation(v, ACTIVATION: tl.constexpr):
    if ACTIVATION == "relu":
        v = tl.maximum(v, 0.0)
    elif ACTIVATION == "gelu_tanh":
        inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
        v = 0.5 * v * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0))
    elif ACTIVATION == "silu":
        v = v * tl.sigmoid(v)
    elif ACTIVATION == "sigmoid":
        v = tl.sigmoid(v)
    return v


@triton.jit
def _matmul_epilogue_kernel(
    a_ptr, b_ptr, bias_ptr, res_ptr, out_ptr, M, N, K, alpha,
    stride_am, stride_ak, stride_bk, stride_bn, stride_rm, stride_rn, stride_om, stride_on,
    HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr, ACTIVATION: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # GROUP_M swizzle: programs that run together share B tiles (and A tiles) in L2
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # epilogue in registers: the M x N result touches HBM once
    acc = acc * alpha
    mask_n = offs_n < N
    if HAS_BIAS:
        acc += tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    acc = _activation(acc, ACTIVATION)
    mask = (offs_m[:, None] < M) & mask_n[None, :]
    if HAS_RES:
        r_ptrs = res_ptr + offs_m[:, None].to(tl.int64) * stride_rm + offs_n[None, :] * stride_rn
        acc += tl.load(r_ptrs, mask=mask, other=0.0).to(tl.float32)
    o_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on
    tl.store(o_ptrs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def matmul_epilogue(
    a: torch.Tensor,
    b: torch.Tensor,
    bias: torch.Tensor | None = None,
    residual: torch.Tensor | None = None,
    *,
    alpha: float = 1.0,
    activation: str = "none",
    allow_tf32: bool = False,
    BLOCK_M: int = 64,
    BLOCK_N: int = 64,
    BLOCK_K: int = 32,
    GROUP_M: int = 8,
    num_warps: int = 4,
    num_stages: int = 3,
) -> torch.Tensor:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    if b.dim() != 2 or a.shape[-1] != b.shape[0]:
        raise ValueError(f"shapes {tuple(a.shape)} @ {tuple(b.shape)} do not match")
    lead = a.shape[:-1]
    a2 = a.reshape(-1, a.shape[-1])
    M, K = a2.shape
    N = b.shape[1]
    out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    res = None
    if residual is not None:
        res = residual.reshape(M, N)
    if M == 0 or N == 0:
        return out.reshape(*lead, N)
    # TF32 only for fp32 inputs and only when allowed; 16-bit inputs use tensor cores anyway
    precision = "ieee" if (a.dtype == torch.float32 and not allow_tf32) else "tf32"
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _matmul_epilogue_kernel[grid](
        a2, b, bias if bias is not None else out, res if res is not None else out, out, M, N, K, alpha,
        a2.stride(0), a2.stride(1), b.stride(0), b.stride(1),
        res.stride(0) if res is not None else 0, res.stride(1) if res is not None else 0,
        out.stride(0), out.stride(1),
        HAS_BIAS=bias is not None, HAS_RES=res is not None, ACTIVATION=activation,
        INPUT_PRECISION=precision, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
        num_warps=num_warps, num_stages=num_stages,
    )
    return out.reshape(*lead, N)
