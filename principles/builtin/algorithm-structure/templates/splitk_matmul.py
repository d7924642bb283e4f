"""Reference kernel: x @ w, 32 x 8192 by 8192 x 64 fp16 (few tiles, long K).

Generated, do not edit: the expert codegen's matmul template(s) (agents/expert/templates/), variant triton-matmul,
rendered for an H200 with the built-in packs' constants by `python -m agents.expert.reference`.
Structure: Triton mm with its operand prologue in the tile loads, split-K x16
Principles: parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/split-k-for-small-mn
"""

import torch
import triton
import triton.language as tl


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_mat0_mm(p_w_ptr, x_ptr, mm_ptr, ws_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """matmul: mm: aten.mm [32 x 8192] @ [8192 x 64]"""
    M = 32
    N = 64
    K = 8192
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # GROUP_M swizzle: programs that run together reuse the same B tiles from L2
    group_id = pid // (GROUP_M * num_pid_n)
    first_m = group_id * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_pid_n)) % group_rows
    pid_n = (pid % (GROUP_M * num_pid_n)) // group_rows
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None])
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :])
    mmask = rm < M
    pid_k = tl.program_id(1)
    k_start = pid_k * 512
    k_stop = tl.minimum(k_start + 512, K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # the operand tiles are computed from their index maps (views, prologues) at every K step
    for k0 in range(k_start, k_stop, BLOCK_K):
        rka = k0 + tl.arange(0, BLOCK_K)[None, :]
        rkb = k0 + tl.arange(0, BLOCK_K)[:, None]
        a_tmp1 = tl.load(x_ptr + (rka + 8192*rm), mmask, other=0.0).to(tl.float32)
        a = a_tmp1.to(tl.float16)
        b_tmp1 = tl.load(p_w_ptr + (64*rkb + rn))
        b_tmp2 = b_tmp1.to(tl.float16).to(tl.float32)
        b = b_tmp2.to(tl.float16)
        acc = tl.dot(a, b, acc)
    # fp32 partials of this K slice; the reduce kernel sums them in a fixed order, then the epilogue
    tl.store(ws_ptr + pid_k * 2048 + rm * 64 + rn, acc, mmask)


@triton.jit
def _egg_mat0_mm_reduce(p_w_ptr, x_ptr, mm_ptr, ws_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    M = 32
    N = 64
    pid = tl.program_id(0)
    rm = (pid // tl.cdiv(N, BLOCK_N) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None])
    rn = (pid % tl.cdiv(N, BLOCK_N) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :])
    mmask = rm < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for s in range(0, 16):
        acc += tl.load(ws_ptr + s * 2048 + rm * 64 + rn, mmask, other=0.0)
    e_tmp1 = acc
    e_tmp2 = e_tmp1.to(tl.float16).to(tl.float32)
    tl.store(mm_ptr + (64*rm + rn), e_tmp2.to(tl.float16), mmask)


_egg_mat0_mm_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch
_egg_mat0_mm_launch_k1 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_mm_launch(p_w, x):
    """matmul: mm: aten.mm [32 x 8192] @ [8192 x 64]"""
    global _egg_mat0_mm_launch_k0, _egg_mat0_mm_launch_k1
    ws = torch.empty_strided((16, 32, 64), (2048, 64, 1), dtype=torch.float32, device=p_w.device)
    mm = torch.empty_strided((32, 64), (64, 1), dtype=torch.float16, device=p_w.device)
    if _egg_mat0_mm_launch_k0 is not None and _egg_mat0_mm_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(p_w, x, mm, ws):
        _egg_mat0_mm_launch_k0[1][(1, 16, 1)](p_w, x, mm, ws, 64, 64, 64, 8)
    elif p_w.device.type == "cuda" and _egg_aligned(p_w, x, mm, ws):
        _egg_mat0_mm_launch_k0 = (torch.cuda.current_device(), _egg_mat0_mm[(1, 16)](
            p_w, x, mm, ws,
            BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4,
        ))
    else:
        _egg_mat0_mm[(1, 16)](
            p_w, x, mm, ws,
            BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4,
        )
    if _egg_mat0_mm_launch_k1 is not None and _egg_mat0_mm_launch_k1[0] == torch.cuda.current_device() and _egg_aligned(p_w, x, mm, ws):
        _egg_mat0_mm_launch_k1[1][(1, 1, 1)](p_w, x, mm, ws, 64, 64)
    elif p_w.device.type == "cuda" and _egg_aligned(p_w, x, mm, ws):
        _egg_mat0_mm_launch_k1 = (torch.cuda.current_device(), _egg_mat0_mm_reduce[(1,)](
            p_w, x, mm, ws,
            BLOCK_M=64, BLOCK_N=64, num_warps=4,
        ))
    else:
        _egg_mat0_mm_reduce[(1,)](
            p_w, x, mm, ws,
            BLOCK_M=64, BLOCK_N=64, num_warps=4,
        )
    return (mm,)
