# EGG expert candidate for problem.py (agents.expert: loop-level IR + templates, no LLM)
# structure: Triton bmm with 2 row reduction(s) over its tiles, its 1024-column rows in 1 pass over N of 128-column blocks, key blocks the mask removes skipped, then bmm [1024 x 128] chained on the tile (its A operand never written)
# variant: triton-matmul-chained: matmuls as Triton kernels with their operand prologues and epilogues fused; a GEMM whose A operand is another GEMM's epilogue tile (attention's P @ V) runs in that GEMM's kernel, the intermediate never written
#   _egg_mat0_bmm_amax_sum_etc: BLOCK_M=128 BLOCK_N=128 BLOCK_K=128 GROUP_M=8 num_warps=8 num_stages=2 SPLIT_K=1
# principles: parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/chain-gemms-in-registers, algorithm-structure/long-rows-in-passes, algorithm-structure/skip-masked-blocks
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"BLOCK_K": 128, "BLOCK_M": 128, "BLOCK_N": 128, "GROUP_M": 8, "SPLIT_K": 1, "num_stages": 2, "num_warps": 8}, "kernel": "_egg_mat0_bmm_amax_sum_etc", "template": "matmul"}], "shape_set": "default", "specialised": ["default", "small"], "variant": "triton-matmul-chained", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


"""transformers' ``eager_attention_forward`` (modeling_llama, one KV head per query head): ``torch
.matmul(query, key.transpose(2, 3)) * scaling``, ``+ attention_mask`` (an additive 4-D causal mask
of 0 / ``finfo.min``), ``softmax(dim=-1, dtype=torch.float32).to(query.dtype)``, ``matmul(attn,
value)`` (the layer's ``transpose(1, 2).contiguous()`` after it is left out: a layout copy, not
masking)."""

import torch
import torch.nn as nn

BATCH = 2
HEADS = 32
SEQ = 1024
HEAD_DIM = 128
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "HEADS": 2, "SEQ": 5, "HEAD_DIM": 8, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, head_dim: int) -> None:
        super().__init__()
        self.scaling = head_dim**-0.5

    def forward(self, query, key, value, attention_mask):
        attn_weights = torch.matmul(query, key.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
        return torch.matmul(attn_weights, value)


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
def _egg_mat0_bmm_amax_sum_etc(attention_mask_ptr, key_ptr, query_ptr, value_ptr, bmm_1_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, DOT_FP32: tl.constexpr):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [64 x 1024 x 128] @ [128 x 1024]"""
    M = 1024
    N = 1024
    K = 128
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
    e_i1 = (pid_b) // 32
    e__max10 = tl.full([BLOCK_M, 1], float("-inf"), tl.float32)
    e__sum11 = tl.zeros([BLOCK_M, 1], tl.float32)
    # the chained GEMM on this tile (aten.bmm: K = the first GEMM's 1024 columns, in registers)
    rd = tl.arange(0, 128)[None, :]
    acc2 = tl.zeros((BLOCK_M, 128), dtype=tl.float32)
    # the live key blocks' bounds, from the mask alone: blocks it removes entirely add nothing (matmul_rows.py)
    e__lo3 = 1024
    e__hi4 = 0
    e__kept5 = tl.zeros([BLOCK_M, 1], tl.int32)
    for n0 in range(0, N, BLOCK_N):
        rn = (n0 + tl.arange(0, BLOCK_N)[None, :])
        rindex = rn
        rnumel = 1024
        e_tmp2 = tl.load(attention_mask_ptr + (1024*rm + rn + 1048576*e_i1)).to(tl.float32)
        e__survives6 = tl.where(e_tmp2 > -1e+30, 1, 0)
        e__live7 = tl.max(e__survives6) > 0
        e__lo3 = tl.where(e__live7 & (n0 < e__lo3), n0, e__lo3)
        e__hi4 = tl.where(e__live7, n0 + BLOCK_N, e__hi4)
        e__kept5 = tl.maximum(e__kept5, tl.max(e__survives6, 1)[:, None])
    if tl.min(e__kept5) == 0:  # a row with no surviving lane: every block, as eager computes it
        e__lo3 = 0
        e__hi4 = N
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
            a_tmp1 = tl.load(query_ptr + (rka + 128*rm + 131072*pid_b)).to(tl.float32)
            a = a_tmp1.to(tl.bfloat16)
            b_tmp1 = tl.load(key_ptr + (rkb + 128*rn + 131072*pid_b)).to(tl.float32)
            b = b_tmp1.to(tl.bfloat16)
            if DOT_FP32:  # the CPU interpreter multiplies bf16 wrongly: exact fp32 products instead
                acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
            else:
                acc = tl.dot(a, b, acc)
        e_tmp8 = acc
        e_tmp9 = e_tmp8.to(tl.bfloat16).to(tl.float32)
        e_tmp12 = (e_tmp9 * 0.08838834764831845).to(tl.bfloat16).to(tl.float32)
        e_tmp13 = tl.load(attention_mask_ptr + (1024*rm + rn + 1048576*e_i1)).to(tl.float32)
        e_tmp14 = (e_tmp12 + e_tmp13).to(tl.bfloat16).to(tl.float32)
        e_tmp15 = _egg_max_nan(e__max10, tl.reduce(e_tmp14, 1, _egg_max_nan)[:, None])
        e_tmp16 = tl.where(e_tmp15 == float("-inf"), 0.0, e_tmp15)
        e_tmp17 = tl.exp(e_tmp14 - e_tmp16)
        e_tmp18 = tl.where(e__max10 == float("-inf"), 0.0, tl.exp(e__max10 - e_tmp16))
        e__sum11 = e__sum11 * e_tmp18 + tl.sum(e_tmp17, 1)[:, None]
        e__max10 = e_tmp15
        rk2 = (n0 + tl.arange(0, BLOCK_N))[:, None]
        acc2 = acc2 * e_tmp18  # the terms summed so far, onto this block's running max
        c_tmp1 = tl.load(value_ptr + (128*rk2 + rd + 131072*pid_b)).to(tl.float32)
        p2 = (e_tmp17).to(tl.bfloat16)
        b2 = (c_tmp1).to(tl.bfloat16)
        if DOT_FP32:  # the CPU interpreter multiplies bf16 wrongly: exact fp32 products instead
            acc2 = tl.dot(p2.to(tl.float32), b2.to(tl.float32), acc2)
        else:
            acc2 = tl.dot(p2, b2, acc2)
    acc2 = acc2 / e__sum11
    d_tmp1 = acc2
    d_tmp2 = d_tmp1.to(tl.bfloat16).to(tl.float32)
    tl.store(bmm_1_ptr + (128*rm + rd + 131072*pid_b), d_tmp2.to(tl.bfloat16))


_egg_mat0_bmm_amax_sum_etc_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_bmm_amax_sum_etc_launch(attention_mask, key, query, value):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [64 x 1024 x 128] @ [128 x 1024]"""
    global _egg_mat0_bmm_amax_sum_etc_launch_k0
    bmm_1 = torch.empty_strided((64, 1024, 128), (131072, 128, 1), dtype=torch.bfloat16, device=attention_mask.device)
    if _egg_mat0_bmm_amax_sum_etc_launch_k0 is not None and _egg_mat0_bmm_amax_sum_etc_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(attention_mask, key, query, value, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_launch_k0[1][(512, 1, 1)](attention_mask, key, query, value, bmm_1, 128, 128, 128, 8, attention_mask.device.type == "cpu")
    elif attention_mask.device.type == "cuda" and _egg_aligned(attention_mask, key, query, value, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_launch_k0 = (torch.cuda.current_device(), _egg_mat0_bmm_amax_sum_etc[(512,)](
            attention_mask, key, query, value, bmm_1,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, GROUP_M=8, DOT_FP32=attention_mask.device.type == "cpu", num_warps=8, num_stages=2,
        ))
    else:
        _egg_mat0_bmm_amax_sum_etc[(512,)](
            attention_mask, key, query, value, bmm_1,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, GROUP_M=8, DOT_FP32=attention_mask.device.type == "cpu", num_warps=8, num_stages=2,
        )
    return (bmm_1,)

@triton.jit
def _egg_mat0_bmm_amax_sum_etc_small(attention_mask_ptr, key_ptr, query_ptr, value_ptr, bmm_1_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [4 x 5 x 8] @ [8 x 5]"""
    M = 5
    N = 5
    K = 8
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
    mmask = rm < M
    nmask = rn < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # the operand tiles are computed from their index maps (views, prologues) at every K step
    for k0 in range(0, K, BLOCK_K):
        rka = k0 + tl.arange(0, BLOCK_K)[None, :]
        rkb = k0 + tl.arange(0, BLOCK_K)[:, None]
        kmask_a = rka < K
        kmask_b = rkb < K
        a_tmp1 = tl.load(query_ptr + (rka + 8*rm + 40*pid_b), mmask & kmask_a, other=0.0)
        a = a_tmp1.to(tl.float32)
        b_tmp1 = tl.load(key_ptr + (rkb + 8*rn + 40*pid_b), nmask & kmask_b, other=0.0)
        b = b_tmp1.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    e_tmp1 = acc
    rindex = rn
    rnumel = 5
    rmask = nmask
    e_tmp2 = (e_tmp1 * 0.3535533905932738)
    e_i3 = (pid_b) // 2
    e_tmp4 = tl.load(attention_mask_ptr + (5*rm + rn + 25*e_i3), mmask & nmask, other=0.0)
    e_tmp5 = (e_tmp2 + e_tmp4)
    e_tmp6 = tl.where(rmask, e_tmp5, float("-inf"))
    e_tmp7 = tl.max(e_tmp6, 1)[:, None]
    e_tmp8 = tl.sum((e_tmp6 != e_tmp6).to(tl.int32), 1)[:, None] > 0
    e_tmp9 = tl.where(e_tmp8, float("nan"), e_tmp7)
    e_tmp10 = (e_tmp5 - e_tmp9)
    e_tmp11 = tl.exp(e_tmp10)
    e_tmp12 = tl.where(rmask, e_tmp11, 0)
    e_tmp13 = tl.sum(e_tmp12, 1)[:, None]
    e_tmp14 = (e_tmp11 / e_tmp13)
    # the chained GEMM on this tile (aten.bmm: K = the first GEMM's 5 columns, in registers)
    rd = tl.arange(0, 16)[None, :]
    dmask = rd < 8
    rk2 = tl.arange(0, BLOCK_N)[:, None]
    kmask2 = rk2 < 5
    c_tmp1 = tl.load(value_ptr + (8*rk2 + rd + 40*pid_b), kmask2 & dmask, other=0.0)
    p2 = (tl.where(nmask, e_tmp14, 0.0)).to(tl.float32)
    b2 = (c_tmp1).to(tl.float32)
    acc2 = tl.dot(p2, b2, input_precision="tf32x3")
    d_tmp1 = acc2
    tl.store(bmm_1_ptr + (8*rm + rd + 40*pid_b), d_tmp1.to(tl.float32), mmask & dmask)


_egg_mat0_bmm_amax_sum_etc_small_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_bmm_amax_sum_etc_small_launch(attention_mask, key, query, value):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [4 x 5 x 8] @ [8 x 5]"""
    global _egg_mat0_bmm_amax_sum_etc_small_launch_k0
    bmm_1 = torch.empty_strided((4, 5, 8), (40, 8, 1), dtype=torch.float32, device=attention_mask.device)
    if _egg_mat0_bmm_amax_sum_etc_small_launch_k0 is not None and _egg_mat0_bmm_amax_sum_etc_small_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(attention_mask, key, query, value, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_small_launch_k0[1][(4, 1, 1)](attention_mask, key, query, value, bmm_1, 64, 16, 32, 8)
    elif attention_mask.device.type == "cuda" and _egg_aligned(attention_mask, key, query, value, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_small_launch_k0 = (torch.cuda.current_device(), _egg_mat0_bmm_amax_sum_etc_small[(4,)](
            attention_mask, key, query, value, bmm_1,
            BLOCK_M=64, BLOCK_N=16, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3,
        ))
    else:
        _egg_mat0_bmm_amax_sum_etc_small[(4,)](
            attention_mask, key, query, value, bmm_1,
            BLOCK_M=64, BLOCK_N=16, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3,
        )
    return (bmm_1,)


# ---- the candidate ----


class ModelNew(Model):
    """matmuls as Triton kernels with their operand prologues and epilogues fused; a GEMM whose A operand is another GEMM's epilogue tile (attention's P @ V) runs in that GEMM's kernel, the intermediate never written: 1 Triton kernel launch(es) per call"""

    def __init__(self, head_dim: int):
        super().__init__(head_dim)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        pass

    def forward(self, *inputs):
        return _EGG_SPECIALISED.get((inputs[0].shape, inputs[0].dtype, inputs[1].shape, inputs[1].dtype, inputs[2].shape, inputs[2].dtype, inputs[3].shape, inputs[3].dtype, ), _egg_forward_default)(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((2, 32, 1024, 128), torch.bfloat16, (2, 32, 1024, 128), torch.bfloat16, (2, 32, 1024, 128), torch.bfloat16, (2, 1, 1024, 1024), torch.bfloat16, )."""
    query = inputs[0]
    key = inputs[1]
    value = inputs[2]
    attention_mask = inputs[3]
    if (query.shape != (2, 32, 1024, 128) or query.dtype != torch.bfloat16) or (key.shape != (2, 32, 1024, 128) or key.dtype != torch.bfloat16) or (value.shape != (2, 32, 1024, 128) or value.dtype != torch.bfloat16) or (attention_mask.shape != (2, 1, 1024, 1024) or attention_mask.dtype != torch.bfloat16):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((query.shape, query.dtype)) + str((key.shape, key.dtype)) + str((value.shape, value.dtype)) + str((attention_mask.shape, attention_mask.dtype)))
    if query.stride() != (4194304, 131072, 128, 1):
        query = torch.empty_strided((2, 32, 1024, 128), (4194304, 131072, 128, 1), dtype=query.dtype, device=query.device).copy_(query)
    if key.stride() != (4194304, 131072, 128, 1):
        key = torch.empty_strided((2, 32, 1024, 128), (4194304, 131072, 128, 1), dtype=key.dtype, device=key.device).copy_(key)
    if value.stride() != (4194304, 131072, 128, 1):
        value = torch.empty_strided((2, 32, 1024, 128), (4194304, 131072, 128, 1), dtype=value.dtype, device=value.device).copy_(value)
    if attention_mask.stride() != (1048576, 1048576, 1024, 1):
        attention_mask = torch.empty_strided((2, 1, 1024, 1024), (1048576, 1048576, 1024, 1), dtype=attention_mask.dtype, device=attention_mask.device).copy_(attention_mask)
    _dev = query.device
    bmm_1, = _egg_mat0_bmm_amax_sum_etc_launch(attention_mask, key, query, value)
    return bmm_1.view((2, 32, 1024, 128))


def _egg_forward_small(self, inputs):
    """ModelNew.forward for the inputs ((2, 2, 5, 8), torch.float32, (2, 2, 5, 8), torch.float32, (2, 2, 5, 8), torch.float32, (2, 1, 5, 5), torch.float32, )."""
    query = inputs[0]
    key = inputs[1]
    value = inputs[2]
    attention_mask = inputs[3]
    if (query.shape != (2, 2, 5, 8) or query.dtype != torch.float32) or (key.shape != (2, 2, 5, 8) or key.dtype != torch.float32) or (value.shape != (2, 2, 5, 8) or value.dtype != torch.float32) or (attention_mask.shape != (2, 1, 5, 5) or attention_mask.dtype != torch.float32):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((query.shape, query.dtype)) + str((key.shape, key.dtype)) + str((value.shape, value.dtype)) + str((attention_mask.shape, attention_mask.dtype)))
    if query.stride() != (80, 40, 8, 1):
        query = torch.empty_strided((2, 2, 5, 8), (80, 40, 8, 1), dtype=query.dtype, device=query.device).copy_(query)
    if key.stride() != (80, 40, 8, 1):
        key = torch.empty_strided((2, 2, 5, 8), (80, 40, 8, 1), dtype=key.dtype, device=key.device).copy_(key)
    if value.stride() != (80, 40, 8, 1):
        value = torch.empty_strided((2, 2, 5, 8), (80, 40, 8, 1), dtype=value.dtype, device=value.device).copy_(value)
    if attention_mask.stride() != (25, 25, 5, 1):
        attention_mask = torch.empty_strided((2, 1, 5, 5), (25, 25, 5, 1), dtype=attention_mask.dtype, device=attention_mask.device).copy_(attention_mask)
    _dev = query.device
    bmm_1, = _egg_mat0_bmm_amax_sum_etc_small_launch(attention_mask, key, query, value)
    return bmm_1.view((2, 2, 5, 8))


_EGG_SPECIALISED = {
    ((2, 32, 1024, 128), torch.bfloat16, (2, 32, 1024, 128), torch.bfloat16, (2, 32, 1024, 128), torch.bfloat16, (2, 1, 1024, 1024), torch.bfloat16, ): _egg_forward_default,
    ((2, 2, 5, 8), torch.float32, (2, 2, 5, 8), torch.float32, (2, 2, 5, 8), torch.float32, (2, 1, 5, 5), torch.float32, ): _egg_forward_small,
}
