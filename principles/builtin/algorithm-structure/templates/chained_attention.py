"""Reference kernel: softmax(q @ k.mT / 8) @ v, 4 x 8 heads x 128 tokens x d 64 fp16 (P @ V on the scores' tile).

Generated, do not edit: the expert codegen's matmul template(s) (agents/expert/templates/), variant triton-matmul-chained,
rendered for an H200 with the built-in packs' constants by `python -m agents.expert.reference`.
Structure: Triton bmm with 2 row reduction(s) over its tiles, then bmm [128 x 64] chained on the tile (its A operand never written)
Principles: parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/chain-gemms-in-registers
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
def _egg_mat0_bmm_amax_sum_etc(k_ptr, q_ptr, v_ptr, bmm_1_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [32 x 128 x 64] @ [64 x 128]"""
    M = 128
    N = 128
    K = 64
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
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
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # the operand tiles are computed from their index maps (views, prologues) at every K step
    for k0 in range(0, K, BLOCK_K):
        rka = k0 + tl.arange(0, BLOCK_K)[None, :]
        rkb = k0 + tl.arange(0, BLOCK_K)[:, None]
        a_tmp1 = tl.load(q_ptr + (rka + 64*rm + 8192*pid_b)).to(tl.float32)
        a = a_tmp1.to(tl.float16)
        b_tmp1 = tl.load(k_ptr + (rkb + 64*rn + 8192*pid_b)).to(tl.float32)
        b = b_tmp1.to(tl.float16)
        acc = tl.dot(a, b, acc)
    e_tmp1 = acc
    e_tmp2 = e_tmp1.to(tl.float16).to(tl.float32)
    rindex = rn
    rnumel = 128
    e_tmp3 = (e_tmp2 * 0.125).to(tl.float16).to(tl.float32)
    e_tmp4 = tl.max(e_tmp3, 1)[:, None]
    e_tmp5 = tl.sum((e_tmp3 != e_tmp3).to(tl.int32), 1)[:, None] > 0
    e_tmp6 = tl.where(e_tmp5, float("nan"), e_tmp4)
    e_tmp7 = (e_tmp3 - e_tmp6)
    e_tmp8 = tl.exp(e_tmp7)
    e_tmp9 = tl.sum(e_tmp8, 1)[:, None]
    e_tmp10 = (e_tmp8 / e_tmp9)
    e_tmp11 = e_tmp10.to(tl.float16).to(tl.float32)
    # the chained GEMM on this tile (aten.bmm: K = the first GEMM's 128 columns, in registers)
    rd = tl.arange(0, 64)[None, :]
    rk2 = tl.arange(0, BLOCK_N)[:, None]
    c_tmp1 = tl.load(v_ptr + (64*rk2 + rd + 8192*pid_b)).to(tl.float32)
    p2 = (e_tmp11).to(tl.float16)
    b2 = (c_tmp1).to(tl.float16)
    acc2 = tl.dot(p2, b2)
    d_tmp1 = acc2
    d_tmp2 = d_tmp1.to(tl.float16).to(tl.float32)
    tl.store(bmm_1_ptr + (64*rm + rd + 8192*pid_b), d_tmp2.to(tl.float16))


_egg_mat0_bmm_amax_sum_etc_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_bmm_amax_sum_etc_launch(k, q, v):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [32 x 128 x 64] @ [64 x 128]"""
    global _egg_mat0_bmm_amax_sum_etc_launch_k0
    bmm_1 = torch.empty_strided((32, 128, 64), (8192, 64, 1), dtype=torch.float16, device=k.device)
    if _egg_mat0_bmm_amax_sum_etc_launch_k0 is not None and _egg_mat0_bmm_amax_sum_etc_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(k, q, v, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_launch_k0[1][(32, 1, 1)](k, q, v, bmm_1, 128, 128, 64, 8)
    elif k.device.type == "cuda" and _egg_aligned(k, q, v, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_launch_k0 = (torch.cuda.current_device(), _egg_mat0_bmm_amax_sum_etc[(32,)](
            k, q, v, bmm_1,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3,
        ))
    else:
        _egg_mat0_bmm_amax_sum_etc[(32,)](
            k, q, v, bmm_1,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3,
        )
    return (bmm_1,)
