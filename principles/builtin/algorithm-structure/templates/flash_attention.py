"""Reference kernel: causal softmax(q @ k.mT / 8) @ v, 2 x 8 heads x 1024 tokens x d 64 fp16 (one pass over the keys).

Generated, do not edit: the expert codegen's matmul template(s) (agents/expert/templates/), variant triton-matmul-chained,
rendered for an H200 with the built-in packs' constants by `python -m agents.expert.reference`.
Structure: Triton bmm with 2 row reduction(s) over its tiles, its 1024-column rows in 1 pass over N of 128-column blocks, key blocks the mask removes skipped, then bmm [1024 x 64] chained on the tile (its A operand never written)
Principles: parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/chain-gemms-in-registers, algorithm-structure/long-rows-in-passes, algorithm-structure/skip-masked-blocks
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _egg_max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)

def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_mat0_bmm_amax_sum_etc(b_causal_ptr, k_ptr, q_ptr, v_ptr, bmm_1_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [16 x 1024 x 64] @ [64 x 1024]"""
    M = 1024
    N = 1024
    K = 64
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = 1  # one program a row tile: the passes below walk N
    # the batch index folds into the grid: num_pid_m * num_pid_n tiles per batch entry
    pid_b = pid // (num_pid_m * num_pid_n)
    pid = pid % (num_pid_m * num_pid_n)
    # GROUP_M swizzle: programs that run together reuse the same B tiles from L2
    group_id = pid // (GROUP_M * num_pid_n)
    first_m = group_id * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_pid_n)) % group_rows
    pid_n = (pid % (GROUP_M * num_pid_n)) // group_rows
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None])
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :])
    e__max10 = tl.full([BLOCK_M, 1], float("-inf"), tl.float32)
    e__sum11 = tl.zeros([BLOCK_M, 1], tl.float32)
    # the chained GEMM on this tile (aten.bmm: K = the first GEMM's 1024 columns, in registers)
    rd = tl.arange(0, 64)[None, :]
    acc2 = tl.zeros((BLOCK_M, 64), dtype=tl.float32)
    # the live key blocks' bounds, from the mask alone: blocks it removes entirely add nothing (matmul_rows.py)
    e__lo3 = 1024
    e__hi4 = 0
    for n0 in range(0, N, BLOCK_N):
        rn = (n0 + tl.arange(0, BLOCK_N)[None, :])
        rindex = rn
        rnumel = 1024
        e_tmp1 = tl.load(b_causal_ptr + (1024*rm + rn))
        e_tmp2 = (~e_tmp1)
        e__survives6 = tl.where(e_tmp2, 0, 1)
        e__live7 = tl.max(e__survives6) > 0
        e__lo3 = tl.where(e__live7 & (n0 < e__lo3), n0, e__lo3)
        e__hi4 = tl.where(e__live7, n0 + BLOCK_N, e__hi4)
    # pass 1 of 1 over N (each block's tile from its own K loop): amax, sum_1 and the chained bmm_1
    for n0 in range(e__lo3, e__hi4, BLOCK_N):
        rn = (n0 + tl.arange(0, BLOCK_N)[None, :])
        rindex = rn
        rnumel = 1024
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        # the operand tiles are computed from their index maps (views, prologues) at every K step
        for k0 in range(0, K, BLOCK_K):
            rka = k0 + tl.arange(0, BLOCK_K)[None, :]
            rkb = k0 + tl.arange(0, BLOCK_K)[:, None]
            a_tmp1 = tl.load(q_ptr + (rka + 64*rm + 65536*pid_b)).to(tl.float32)
            a = a_tmp1.to(tl.float16)
            b_tmp1 = tl.load(k_ptr + (rkb + 64*rn + 65536*pid_b)).to(tl.float32)
            b = b_tmp1.to(tl.float16)
            acc = tl.dot(a, b, acc)
        e_tmp8 = acc
        e_tmp9 = e_tmp8.to(tl.float16).to(tl.float32)
        e_tmp12 = tl.load(b_causal_ptr + (1024*rm + rn))
        e_tmp13 = (~e_tmp12)
        e_tmp14 = (e_tmp9 * 0.125).to(tl.float16).to(tl.float32)
        e_tmp15 = (tl.where(e_tmp13, float("-inf"), e_tmp14)).to(tl.float16).to(tl.float32)
        e_tmp16 = _egg_max_nan(e__max10, tl.reduce(e_tmp15, 1, _egg_max_nan)[:, None])
        e_tmp17 = tl.where(e_tmp16 == float("-inf"), 0.0, e_tmp16)
        e_tmp18 = tl.exp(e_tmp15 - e_tmp17)
        e_tmp19 = tl.where(e__max10 == float("-inf"), 0.0, tl.exp(e__max10 - e_tmp17))
        e__sum11 = e__sum11 * e_tmp19 + tl.sum(e_tmp18, 1)[:, None]
        e__max10 = e_tmp16
        rk2 = (n0 + tl.arange(0, BLOCK_N))[:, None]
        acc2 = acc2 * e_tmp19  # the terms summed so far, onto this block's running max
        c_tmp1 = tl.load(v_ptr + (64*rk2 + rd + 65536*pid_b)).to(tl.float32)
        p2 = (e_tmp18).to(tl.float16)
        b2 = (c_tmp1).to(tl.float16)
        acc2 = tl.dot(p2, b2, acc2)
    acc2 = acc2 / e__sum11
    d_tmp1 = acc2
    d_tmp2 = d_tmp1.to(tl.float16).to(tl.float32)
    tl.store(bmm_1_ptr + (64*rm + rd + 65536*pid_b), d_tmp2.to(tl.float16))


_egg_mat0_bmm_amax_sum_etc_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_bmm_amax_sum_etc_launch(b_causal, k, q, v):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [16 x 1024 x 64] @ [64 x 1024]"""
    global _egg_mat0_bmm_amax_sum_etc_launch_k0
    bmm_1 = torch.empty_strided((16, 1024, 64), (65536, 64, 1), dtype=torch.float16, device=b_causal.device)
    if _egg_mat0_bmm_amax_sum_etc_launch_k0 is not None and _egg_mat0_bmm_amax_sum_etc_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(b_causal, k, q, v, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_launch_k0[1][(128, 1, 1)](b_causal, k, q, v, bmm_1, 128, 128, 64, 8)
    elif b_causal.device.type == "cuda" and _egg_aligned(b_causal, k, q, v, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_launch_k0 = (torch.cuda.current_device(), _egg_mat0_bmm_amax_sum_etc[(128,)](
            b_causal, k, q, v, bmm_1,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=2,
        ))
    else:
        _egg_mat0_bmm_amax_sum_etc[(128,)](
            b_causal, k, q, v, bmm_1,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=2,
        )
    return (bmm_1,)
