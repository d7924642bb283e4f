"""Is an fp32 GEMM faster as three TF32 GEMMs over pre-split operands than cuBLAS's SGEMM (GPU)?

PyTorch's default flags keep fp32 matmuls exact (TF32 off), so cuBLAS runs SGEMM on the CUDA cores
(~67 TFLOP/s peak on an H200) and the expert's Triton ``ieee`` GEMM reaches 0.87-0.92x of it.
3xTF32 (x = hi + lo, both TF32; hi*hi + hi*lo + lo*hi in fp32) keeps fp32 accuracy on tensor cores
(~495 dense TF32 TFLOP/s), but Triton's ``input_precision="tf32x3"`` splits the tiles in registers
at every K step and ran 23% slower than ``ieee`` on KernelBench level 1 #1 (2026-12-03). This
probe splits each operand once, in a pass over memory (hi = rna(x), lo = rna(x - hi)), and runs one
Triton kernel whose K loop walks three segments, each a plain TF32 dot whose tiles come straight
from memory: (a_lo, b_hi), (a_hi, b_lo), (a_hi, b_hi), small products first.

    python benchmarks/split_tf32_probe.py --out split_tf32.json

Memory traffic of the split (4096^3): A and B read once, hi and lo written (2 x 2 x 64 MB), about
0.1 ms at 4.3 TB/s against ~2.7 ms of SGEMM; the GEMM does 3x a TF32 GEMM's work.

Result (H200, 2026-12-03, BENCHMARKS.md "sixth session"): one Triton TF32 pass took 1.675 ms at
4096^3 against SGEMM's 2.680, so three cannot win (4.71 ms at best); the split kernel's mean error
was also 10x SGEMM's, which was not investigated. The route is closed for Triton 3.6 on the H200;
this script stays as the evidence.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from egg.evaluate.gpu_lock import GpuLock  # noqa: E402


# %%
@triton.jit
def _rna_tf32(x):
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)


@triton.jit
def _split_kernel(x_ptr, hi_ptr, lo_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    x = tl.load(x_ptr + i, mask)
    hi = _rna_tf32(x)
    tl.store(hi_ptr + i, hi, mask)
    tl.store(lo_ptr + i, _rna_tf32(x - hi), mask)


@triton.jit
def _tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # this program's output rows and columns, GROUP_M row tiles swizzled together for L2 reuse
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * num_n)
    first = group * GROUP_M
    rows = tl.minimum(num_m - first, GROUP_M)
    pid_m = first + (pid % (GROUP_M * num_n)) % rows
    pid_n = (pid % (GROUP_M * num_n)) // rows
    return pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None], pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]


@triton.jit
def _gemm3_kernel(ahi, alo, bhi, blo, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SEGMENTS: tl.constexpr):
    rm, rn = _tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    steps = tl.cdiv(K, BLOCK_K)
    for t in range(0, SEGMENTS * steps):
        seg = t // steps
        k0 = (t % steps) * BLOCK_K
        ka = k0 + tl.arange(0, BLOCK_K)[None, :]
        kb = k0 + tl.arange(0, BLOCK_K)[:, None]
        a_base = tl.where(seg == 0, alo, ahi) if SEGMENTS == 3 else ahi
        b_base = tl.where(seg == 1, blo, bhi) if SEGMENTS == 3 else bhi
        a = tl.load(a_base + rm * K + ka, (rm < M) & (ka < K), other=0.0)
        b = tl.load(b_base + kb * N + rn, (kb < K) & (rn < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32")
    tl.store(c_ptr + rm * N + rn, acc, (rm < M) & (rn < N))


@triton.jit
def _gemm_builtin_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PRECISION: tl.constexpr):
    rm, rn = _tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ka = k0 + tl.arange(0, BLOCK_K)[None, :]
        kb = k0 + tl.arange(0, BLOCK_K)[:, None]
        a = tl.load(a_ptr + rm * K + ka, (rm < M) & (ka < K), other=0.0)
        b = tl.load(b_ptr + kb * N + rn, (kb < K) & (rn < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(c_ptr + rm * N + rn, acc, (rm < M) & (rn < N))


# %%
def split(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    hi, lo = torch.empty_like(x), torch.empty_like(x)
    _split_kernel[(triton.cdiv(x.numel(), 1024),)](x, hi, lo, x.numel(), BLOCK=1024)
    return hi, lo


def split_gemm(a: torch.Tensor, b: torch.Tensor, cfg: dict, segments: int = 3) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    ahi, alo = split(a)
    bhi, blo = split(b)
    c = torch.empty(m, n, device=a.device)
    grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
    _gemm3_kernel[grid](ahi, alo, bhi, blo, c, m, n, k, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                        BLOCK_K=cfg["BLOCK_K"], GROUP_M=8, SEGMENTS=segments, num_warps=cfg["num_warps"],
                        num_stages=cfg["num_stages"])
    return c


def builtin_gemm(a: torch.Tensor, b: torch.Tensor, cfg: dict, precision: str) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty(m, n, device=a.device)
    grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
    _gemm_builtin_kernel[grid](a, b, c, m, n, k, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                               BLOCK_K=cfg["BLOCK_K"], GROUP_M=8, PRECISION=precision, num_warps=cfg["num_warps"],
                               num_stages=cfg["num_stages"])
    return c


CONFIGS = [
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 16, "num_warps": 8, "num_stages": 5},
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4096x4096x4096,8192x8192x8192,2048x8192x4096")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's default: SGEMM
    lock = GpuLock.for_device(torch.device("cuda"))

    def bench(fn: object) -> float:  # under the judge's exclusive lock: never beside another timing
        with lock.exclusive():
            return float(triton.testing.do_bench(fn, warmup=20, rep=200))

    rows = []
    for size in args.sizes.split(","):
        m, n, k = (int(v) for v in size.split("x"))
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(m, k, device="cuda", generator=g)
        b = torch.randn(k, n, device="cuda", generator=g)
        exact = (a.double() @ b.double())
        ref = a @ b

        def err(c: torch.Tensor) -> tuple[float, float]:
            e = (c.double() - exact).abs()
            return float(e.mean()), float(e.max())

        row = {"size": size, "cublas_ms": bench(lambda: a @ b),
               "cublas_err": err(ref), "split_ms": {}, "split_gemm_only_ms": {}, "split_err": {}, "builtin_ms": {}}
        ahi, alo = split(a)
        bhi, blo = split(b)
        for i, cfg in enumerate(CONFIGS):
            key = "x".join(str(cfg[x]) for x in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"))
            try:
                c = split_gemm(a, b, cfg)
                row["split_err"][key] = err(c)
                row["split_ms"][key] = bench(lambda: split_gemm(a, b, cfg))
                cc = torch.empty(m, n, device="cuda")
                grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
                row["split_gemm_only_ms"][key] = bench(lambda: _gemm3_kernel[grid](
                    ahi, alo, bhi, blo, cc, m, n, k, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                    BLOCK_K=cfg["BLOCK_K"], GROUP_M=8, SEGMENTS=3, num_warps=cfg["num_warps"],
                    num_stages=cfg["num_stages"]))
                if i < 2:
                    for prec in ("ieee", "tf32x3", "tf32"):
                        row["builtin_ms"][f"{prec} {key}"] = bench(lambda: builtin_gemm(a, b, cfg, prec))
            except Exception as exc:  # noqa: BLE001 - a config that does not compile is a finding
                row["split_ms"][key] = repr(exc)[:200]
        rows.append(row)
        print(json.dumps(row))  # noqa: T201 - a benchmark script's output
    args.out.write_text(json.dumps({"rows": rows, "device": torch.cuda.get_device_name()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
