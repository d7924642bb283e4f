"""Reference kernel: gelu(x @ w.T + b), x 512 x 128, w 256 x 128, fp16.

Generated, do not edit: the expert codegen's matmul template(s) (agents/expert/templates/), variant triton-matmul,
rendered for an H200 with the built-in packs' constants by `python -m agents.expert.reference`.
Structure: Triton addmm with its operand prologue in the tile loads and a 1-output epilogue
Principles: parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/fuse-matmul-epilogue, algorithm-structure/split-k-for-small-mn
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
def _egg_mat0_addmm_gelu(p_b_ptr, p_w_ptr, x_ptr, gelu_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """matmul: addmm, gelu: aten.addmm [512 x 128] @ [128 x 256]"""
    M = 512
    N = 256
    K = 128
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
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # the operand tiles are computed from their index maps (views, prologues) at every K step
    for k0 in range(0, K, BLOCK_K):
        rka = k0 + tl.arange(0, BLOCK_K)[None, :]
        rkb = k0 + tl.arange(0, BLOCK_K)[:, None]
        a_tmp1 = tl.load(x_ptr + (rka + 128*rm)).to(tl.float32)
        a = a_tmp1.to(tl.float16)
        b_tmp1 = tl.load(p_w_ptr + (rkb + 128*rn))
        b_tmp2 = b_tmp1.to(tl.float16).to(tl.float32)
        b = b_tmp2.to(tl.float16)
        acc = tl.dot(a, b, acc)
    e_tmp1 = tl.load(p_b_ptr + (rn))
    e_tmp2 = e_tmp1.to(tl.float16).to(tl.float32)
    e_tmp3 = acc + e_tmp2
    e_tmp4 = e_tmp3.to(tl.float16).to(tl.float32)
    e_tmp5 = (0.5 * e_tmp4 * (1.0 + tl.erf(e_tmp4 * 0.7071067811865476))).to(tl.float16).to(tl.float32)
    tl.store(gelu_ptr + (256*rm + rn), e_tmp5.to(tl.float16))


_egg_mat0_addmm_gelu_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_addmm_gelu_launch(p_b, p_w, x):
    """matmul: addmm, gelu: aten.addmm [512 x 128] @ [128 x 256]"""
    global _egg_mat0_addmm_gelu_launch_k0
    gelu = torch.empty_strided((512, 256), (256, 1), dtype=torch.float16, device=p_b.device)
    if _egg_mat0_addmm_gelu_launch_k0 is not None and _egg_mat0_addmm_gelu_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(p_b, p_w, x, gelu):
        _egg_mat0_addmm_gelu_launch_k0[1][(8, 1, 1)](p_b, p_w, x, gelu, 128, 128, 64, 8)
    elif p_b.device.type == "cuda" and _egg_aligned(p_b, p_w, x, gelu):
        _egg_mat0_addmm_gelu_launch_k0 = (torch.cuda.current_device(), _egg_mat0_addmm_gelu[(8,)](
            p_b, p_w, x, gelu,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3,
        ))
    else:
        _egg_mat0_addmm_gelu[(8,)](
            p_b, p_w, x, gelu,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3,
        )
    return (gelu,)
