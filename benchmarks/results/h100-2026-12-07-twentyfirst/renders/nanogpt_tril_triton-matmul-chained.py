# EGG expert candidate for nanogpt_tril.py (agents.expert: loop-level IR + templates, no LLM)
# structure: Triton bmm with 2 row reduction(s) over its tiles, its 1024-column rows in 1 pass over N of 64-column blocks, key blocks the mask removes skipped, then bmm [1024 x 64] chained on the tile (its A operand never written), tf32x3 fp32 dot
# variant: triton-matmul-chained: matmuls as Triton kernels with their operand prologues and epilogues fused; a GEMM whose A operand is another GEMM's epilogue tile (attention's P @ V) runs in that GEMM's kernel, the intermediate never written
#   _egg_mat0_bmm_amax_sum_etc: BLOCK_M=64 BLOCK_N=64 BLOCK_K=64 GROUP_M=8 num_warps=4 num_stages=2 SPLIT_K=1
# principles: parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/fp32-gemm-3xtf32, tiling/fp32-dot-input-precision, algorithm-structure/chain-gemms-in-registers, algorithm-structure/long-rows-in-passes, algorithm-structure/skip-masked-blocks
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"BLOCK_K": 64, "BLOCK_M": 64, "BLOCK_N": 64, "GROUP_M": 8, "SPLIT_K": 1, "num_stages": 2, "num_warps": 4}, "kernel": "_egg_mat0_bmm_amax_sum_etc", "template": "matmul"}], "shape_set": "default", "specialised": ["default"], "variant": "triton-matmul-chained", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


"""nanoGPT's slow-path ``CausalSelfAttention`` core (``model.py``, the branch without flash): ``att
= (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))``, ``att.masked_fill(self.bias[:, :, :T,
:T] == 0, float('-inf'))`` with a registered ``tril`` buffer, ``F.softmax``, ``att @ v`` (dropout
off: eval). q/k/v [batch, heads, seq, head_dim]."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
HEADS = 12
SEQ = 1024
HEAD_DIM = 64
BLOCK_SIZE = 1024
SHAPES = {"small": {"BATCH": 2, "HEADS": 2, "SEQ": 6, "HEAD_DIM": 8, "BLOCK_SIZE": 8}}


class Model(nn.Module):
    def __init__(self, block_size: int) -> None:
        super().__init__()
        self.register_buffer(
            "bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        )

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ v


# ---- kernels ----


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
def _egg_mat0_bmm_amax_sum_etc(b_bias_ptr, k_ptr, q_ptr, v_ptr, bmm_1_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [96 x 1024 x 64] @ [64 x 1024]"""
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
    e__max9 = tl.full([BLOCK_M, 1], float("-inf"), tl.float32)
    e__sum10 = tl.zeros([BLOCK_M, 1], tl.float32)
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
        e_tmp1 = tl.load(b_bias_ptr + (1024*rm + rn))
        e_tmp2 = (e_tmp1 == 0.0)
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
            a_tmp1 = tl.load(q_ptr + (rka + 64*rm + 65536*pid_b))
            a = a_tmp1.to(tl.float32)
            b_tmp1 = tl.load(k_ptr + (rkb + 64*rn + 65536*pid_b))
            b = b_tmp1.to(tl.float32)
            acc = tl.dot(a, b, acc, input_precision="tf32x3")
        e_tmp8 = acc
        e_tmp11 = tl.load(b_bias_ptr + (1024*rm + rn))
        e_tmp12 = (e_tmp11 == 0.0)
        e_tmp13 = (e_tmp8 * 0.125)
        e_tmp14 = tl.where(e_tmp12, float("-inf"), e_tmp13)
        e_tmp15 = _egg_max_nan(e__max9, tl.reduce(e_tmp14, 1, _egg_max_nan)[:, None])
        e_tmp16 = tl.where(e_tmp15 == float("-inf"), 0.0, e_tmp15)
        e_tmp17 = tl.exp(e_tmp14 - e_tmp16)
        e_tmp18 = tl.where(e__max9 == float("-inf"), 0.0, tl.exp(e__max9 - e_tmp16))
        e__sum10 = e__sum10 * e_tmp18 + tl.sum(e_tmp17, 1)[:, None]
        e__max9 = e_tmp15
        rk2 = (n0 + tl.arange(0, BLOCK_N))[:, None]
        acc2 = acc2 * e_tmp18  # the terms summed so far, onto this block's running max
        c_tmp1 = tl.load(v_ptr + (64*rk2 + rd + 65536*pid_b))
        p2 = (e_tmp17).to(tl.float32)
        b2 = (c_tmp1).to(tl.float32)
        acc2 = tl.dot(p2, b2, acc2, input_precision="tf32x3")
    acc2 = acc2 / e__sum10
    d_tmp1 = acc2
    tl.store(bmm_1_ptr + (64*rm + rd + 65536*pid_b), d_tmp1.to(tl.float32))


_egg_mat0_bmm_amax_sum_etc_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_bmm_amax_sum_etc_launch(b_bias, k, q, v):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [96 x 1024 x 64] @ [64 x 1024]"""
    global _egg_mat0_bmm_amax_sum_etc_launch_k0
    bmm_1 = torch.empty_strided((96, 1024, 64), (65536, 64, 1), dtype=torch.float32, device=b_bias.device)
    if _egg_mat0_bmm_amax_sum_etc_launch_k0 is not None and _egg_mat0_bmm_amax_sum_etc_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(b_bias, k, q, v, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_launch_k0[1][(1536, 1, 1)](b_bias, k, q, v, bmm_1, 64, 64, 64, 8)
    elif b_bias.device.type == "cuda" and _egg_aligned(b_bias, k, q, v, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_launch_k0 = (torch.cuda.current_device(), _egg_mat0_bmm_amax_sum_etc[(1536,)](
            b_bias, k, q, v, bmm_1,
            BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=2,
        ))
    else:
        _egg_mat0_bmm_amax_sum_etc[(1536,)](
            b_bias, k, q, v, bmm_1,
            BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=2,
        )
    return (bmm_1,)


# ---- the candidate ----


class ModelNew(Model):
    """matmuls as Triton kernels with their operand prologues and epilogues fused; a GEMM whose A operand is another GEMM's epilogue tile (attention's P @ V) runs in that GEMM's kernel, the intermediate never written: 1 Triton kernel launch(es) per call"""

    def __init__(self, block_size: int):
        super().__init__(block_size)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        self._egg_owners = (self,)

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((8, 12, 1024, 64), torch.float32, (8, 12, 1024, 64), torch.float32, (8, 12, 1024, 64), torch.float32, )."""
    owners = self._egg_owners
    b_bias = owners[0].bias
    q = inputs[0]
    k = inputs[1]
    v = inputs[2]
    if (q.shape != (8, 12, 1024, 64) or q.dtype != torch.float32) or (k.shape != (8, 12, 1024, 64) or k.dtype != torch.float32) or (v.shape != (8, 12, 1024, 64) or v.dtype != torch.float32):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((q.shape, q.dtype)) + str((k.shape, k.dtype)) + str((v.shape, v.dtype)))
    if q.stride() != (786432, 65536, 64, 1):
        q = torch.empty_strided((8, 12, 1024, 64), (786432, 65536, 64, 1), dtype=q.dtype, device=q.device).copy_(q)
    if k.stride() != (786432, 65536, 64, 1):
        k = torch.empty_strided((8, 12, 1024, 64), (786432, 65536, 64, 1), dtype=k.dtype, device=k.device).copy_(k)
    if v.stride() != (786432, 65536, 64, 1):
        v = torch.empty_strided((8, 12, 1024, 64), (786432, 65536, 64, 1), dtype=v.dtype, device=v.device).copy_(v)
    _dev = q.device
    bmm_1, = _egg_mat0_bmm_amax_sum_etc_launch(b_bias, k, q, v)
    return bmm_1.view((8, 12, 1024, 64))
