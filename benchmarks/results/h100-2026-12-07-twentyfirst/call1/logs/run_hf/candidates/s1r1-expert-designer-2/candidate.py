# EGG expert candidate for problem.py (agents.expert: loop-level IR + templates, no LLM)
# structure: Triton bmm; max, sum over 1024 x 65536 rows, persistent (rows in registers), with 1 store(s) [shape set small: triton-matmul-chained, as triton-matmul does not apply there]
# variant: triton-matmul: matmuls as Triton kernels with their operand prologues and epilogues fused
#   _egg_mat0_bmm: BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 num_warps=8 num_stages=3 SPLIT_K=1
#   _egg_red1_amax_sum_bmm_1_a: PERSISTENT=True XBLOCK=4 RBLOCK=1024 num_warps=8 EVICT_STREAM='evict_first' EVICT_REUSE='' ONLINE_MAX='row'
#   _egg_mat2_bmm: BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 num_warps=8 num_stages=3 SPLIT_K=1
# principles: parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/fuse-reduction-with-neighbours, memory/masked-loads-neutral-other, tiling/one-pass-row-limit, parallel-mapping/one-row-per-program
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"BLOCK_K": 64, "BLOCK_M": 128, "BLOCK_N": 128, "GROUP_M": 8, "SPLIT_K": 1, "num_stages": 3, "num_warps": 8}, "kernel": "_egg_mat0_bmm", "template": "matmul"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "ONLINE_MAX": "row", "PERSISTENT": true, "RBLOCK": 1024, "XBLOCK": 4, "num_warps": 8}, "kernel": "_egg_red1_amax_sum_bmm_1_a", "template": "reduction"}, {"config": {"BLOCK_K": 64, "BLOCK_M": 128, "BLOCK_N": 128, "GROUP_M": 8, "SPLIT_K": 1, "num_stages": 3, "num_warps": 8}, "kernel": "_egg_mat2_bmm", "template": "matmul"}], "shape_set": "default", "specialised": ["default", "small"], "variant": "triton-matmul", "version": 2}


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


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_mat0_bmm(key_ptr, query_ptr, bmm_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, DOT_FP32: tl.constexpr):
    """matmul: bmm: aten.bmm [64 x 1024 x 128] @ [128 x 1024]"""
    M = 1024
    N = 1024
    K = 128
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
        a_tmp1 = tl.load(query_ptr + (rka + 128*rm + 131072*pid_b)).to(tl.float32)
        a = a_tmp1.to(tl.bfloat16)
        b_tmp1 = tl.load(key_ptr + (rkb + 128*rn + 131072*pid_b)).to(tl.float32)
        b = b_tmp1.to(tl.bfloat16)
        if DOT_FP32:  # the CPU interpreter multiplies bf16 wrongly: exact fp32 products instead
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
        else:
            acc = tl.dot(a, b, acc)
    e_tmp1 = acc
    e_tmp2 = e_tmp1.to(tl.bfloat16).to(tl.float32)
    tl.store(bmm_ptr + (1024*rm + rn + 1048576*pid_b), e_tmp2.to(tl.bfloat16))


_egg_mat0_bmm_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_bmm_launch(key, query):
    """matmul: bmm: aten.bmm [64 x 1024 x 128] @ [128 x 1024]"""
    global _egg_mat0_bmm_launch_k0
    bmm = torch.empty_strided((64, 1024, 1024), (1048576, 1024, 1), dtype=torch.bfloat16, device=key.device)
    if _egg_mat0_bmm_launch_k0 is not None and _egg_mat0_bmm_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(key, query, bmm):
        _egg_mat0_bmm_launch_k0[1][(4096, 1, 1)](key, query, bmm, 128, 128, 64, 8, key.device.type == "cpu")
    elif key.device.type == "cuda" and _egg_aligned(key, query, bmm):
        _egg_mat0_bmm_launch_k0 = (torch.cuda.current_device(), _egg_mat0_bmm[(4096,)](
            key, query, bmm,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, DOT_FP32=key.device.type == "cpu", num_warps=8, num_stages=3,
        ))
    else:
        _egg_mat0_bmm[(4096,)](
            key, query, bmm,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, DOT_FP32=key.device.type == "cpu", num_warps=8, num_stages=3,
        )
    return (bmm,)

@triton.jit
def _egg_red1_amax_sum_bmm_1_a(attention_mask_ptr, bmm_ptr, bmm_1_a_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: amax, sum_1, bmm_1_a"""
    xnumel = 65536
    rnumel = 1024
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    # persistent: the whole reduced extent of XBLOCK rows sits in registers, read once
    rindex = tl.arange(0, RBLOCK)[None, :]
    tmp1 = tl.load(bmm_ptr + (rindex + 1024*xindex), eviction_policy="evict_first").to(tl.float32)
    tmp2 = (tmp1 * 0.08838834764831845).to(tl.bfloat16).to(tl.float32)
    i3 = (xindex) % 1024
    i4 = (xindex) // 32768
    tmp5 = tl.load(attention_mask_ptr + (rindex + 1024*i3 + 1048576*i4)).to(tl.float32)
    tmp6 = (tmp2 + tmp5).to(tl.bfloat16).to(tl.float32)
    tmp7 = tl.max(tmp6, 1)[:, None]
    tmp8 = tl.sum((tmp6 != tmp6).to(tl.int32), 1)[:, None] > 0
    tmp9 = tl.where(tmp8, float("nan"), tmp7)
    tmp10 = (tmp6 - tmp9)
    tmp11 = tl.exp(tmp10)
    tmp12 = tl.sum(tmp11, 1)[:, None]
    tmp13 = (tmp11 / tmp12)
    tmp14 = tmp13.to(tl.bfloat16).to(tl.float32)
    tl.store(bmm_1_a_ptr + (rindex + 1024*xindex), tmp14.to(tl.bfloat16))


_egg_red1_amax_sum_bmm_1_a_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red1_amax_sum_bmm_1_a_launch(attention_mask, bmm):
    """reduction: amax, sum_1, bmm_1_a"""
    global _egg_red1_amax_sum_bmm_1_a_launch_k0
    bmm_1_a = torch.empty_strided((64, 1024, 1024), (1048576, 1024, 1), dtype=torch.bfloat16, device=attention_mask.device)
    if _egg_red1_amax_sum_bmm_1_a_launch_k0 is not None and _egg_red1_amax_sum_bmm_1_a_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(attention_mask, bmm, bmm_1_a):
        _egg_red1_amax_sum_bmm_1_a_launch_k0[1][(16384, 1, 1)](attention_mask, bmm, bmm_1_a, 4, 1024)
    elif attention_mask.device.type == "cuda" and _egg_aligned(attention_mask, bmm, bmm_1_a):
        _egg_red1_amax_sum_bmm_1_a_launch_k0 = (torch.cuda.current_device(), _egg_red1_amax_sum_bmm_1_a[(16384,)](
            attention_mask, bmm, bmm_1_a,
            XBLOCK=4, RBLOCK=1024, num_warps=8,
        ))
    else:
        _egg_red1_amax_sum_bmm_1_a[(16384,)](
            attention_mask, bmm, bmm_1_a,
            XBLOCK=4, RBLOCK=1024, num_warps=8,
        )
    return (bmm_1_a,)

@triton.jit
def _egg_mat2_bmm(bmm_1_a_ptr, value_ptr, bmm_1_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, DOT_FP32: tl.constexpr):
    """matmul: bmm_1: aten.bmm [64 x 1024 x 1024] @ [1024 x 128]"""
    M = 1024
    N = 128
    K = 1024
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
        a_tmp1 = tl.load(bmm_1_a_ptr + (rka + 1024*rm + 1048576*pid_b)).to(tl.float32)
        a = a_tmp1.to(tl.bfloat16)
        b_tmp1 = tl.load(value_ptr + (128*rkb + rn + 131072*pid_b)).to(tl.float32)
        b = b_tmp1.to(tl.bfloat16)
        if DOT_FP32:  # the CPU interpreter multiplies bf16 wrongly: exact fp32 products instead
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
        else:
            acc = tl.dot(a, b, acc)
    e_tmp1 = acc
    e_tmp2 = e_tmp1.to(tl.bfloat16).to(tl.float32)
    tl.store(bmm_1_ptr + (128*rm + rn + 131072*pid_b), e_tmp2.to(tl.bfloat16))


_egg_mat2_bmm_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat2_bmm_launch(bmm_1_a, value):
    """matmul: bmm_1: aten.bmm [64 x 1024 x 1024] @ [1024 x 128]"""
    global _egg_mat2_bmm_launch_k0
    bmm_1 = torch.empty_strided((64, 1024, 128), (131072, 128, 1), dtype=torch.bfloat16, device=bmm_1_a.device)
    if _egg_mat2_bmm_launch_k0 is not None and _egg_mat2_bmm_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(bmm_1_a, value, bmm_1):
        _egg_mat2_bmm_launch_k0[1][(512, 1, 1)](bmm_1_a, value, bmm_1, 128, 128, 64, 8, bmm_1_a.device.type == "cpu")
    elif bmm_1_a.device.type == "cuda" and _egg_aligned(bmm_1_a, value, bmm_1):
        _egg_mat2_bmm_launch_k0 = (torch.cuda.current_device(), _egg_mat2_bmm[(512,)](
            bmm_1_a, value, bmm_1,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, DOT_FP32=bmm_1_a.device.type == "cpu", num_warps=8, num_stages=3,
        ))
    else:
        _egg_mat2_bmm[(512,)](
            bmm_1_a, value, bmm_1,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, DOT_FP32=bmm_1_a.device.type == "cpu", num_warps=8, num_stages=3,
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
    """matmuls as Triton kernels with their operand prologues and epilogues fused: 3 Triton kernel launch(es) per call"""

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
    bmm, = _egg_mat0_bmm_launch(key, query)
    bmm_1_a, = _egg_red1_amax_sum_bmm_1_a_launch(attention_mask, bmm)
    bmm_1, = _egg_mat2_bmm_launch(bmm_1_a, value)
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
