# EGG expert candidate for short_seq_attention.py (agents.expert: loop-level IR + templates, no LLM)
# structure: Triton bmm with 2 row reduction(s) over its tiles, then bmm [256 x 64] chained on the tile (its A operand never written), fp32 products of bfloat16 values on bfloat16 tensor cores
# variant: triton-matmul-chained: matmuls as Triton kernels with their operand prologues and epilogues fused; a GEMM whose A operand is another GEMM's epilogue tile (attention's P @ V) runs in that GEMM's kernel, the intermediate never written
#   _egg_mat0_bmm_amax_sum_etc: BLOCK_M=64 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 num_warps=4 num_stages=3 SPLIT_K=1
# principles: parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/upcast-operands-in-16-bit, algorithm-structure/chain-gemms-in-registers
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"BLOCK_K": 64, "BLOCK_M": 64, "BLOCK_N": 256, "GROUP_M": 8, "SPLIT_K": 1, "num_stages": 3, "num_warps": 4}, "kernel": "_egg_mat0_bmm_amax_sum_etc", "template": "matmul"}], "shape_set": "default", "specialised": ["default"], "variant": "triton-matmul-chained", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


"""Attention for short sequences: softmax(Q K^T / sqrt(d)) V, non-causal, q/k/v [B, H, S, D] bf16.

Where it occurs: encoders with short, fixed-length inputs, in training and inference: BERT and
sentence-embedding models (256 tokens), ViT/CLIP/SigLIP image encoders (197 or 257 patch
tokens), Whisper's and rerankers' short windows; also the per-chunk attention of many
multimodal pipelines. The reference is the unfused attention a model writes by hand, with
upcast scores as in GPT-2's ``reorder_and_upcast_attn`` and Stable Diffusion's
``upcast_attention``: fp32 scores matmul, scale, fp32 softmax, bf16 probabilities, value matmul.
It materialises the [B, H, S, S] score and probability matrices. (Scores rounded to bf16 before
the softmax, as in plain bf16 eager attention, are off by up to ~1.5% at these logit sizes, more
than the bf16 tolerance against the fp32 scores a fused kernel keeps; bf16 probabilities, as a
flash-attention kernel feeds its P @ V MMA, are within it.)

Sizes that matter: 64 sequences x 16 heads x 256 tokens x head_dim 64 (production; BERT-large /
ViT-L shaped). S <= 256 means a whole row of scores fits in one program, so no online softmax is
needed. The ``vit`` set is ViT-B/16 at 224 px (197 tokens, 12 heads); the ``odd`` set uses 197
tokens and head_dim 80. Queries and keys have std 1.5, so scaled scores have std ~2.25 and the
rows are peaked as in trained models.

Character: at production the four q/k/v/out tensors are 134 MB while the fused FLOPs are
4 * B * H * S^2 * D = 17.2 GFLOP: memory bound once fused (the reference also writes and reads
the 268 MB fp32 score matrix and a bf16 copy of it).

Bytes moved at production: q, k, v read and out written (compulsory traffic),
4 x 33.6 MB = 134.2 MB.
"""

import torch
import torch.nn as nn

BATCH = 64
HEADS = 16
SEQ = 256
HEAD_DIM = 64
DTYPE = "bfloat16"
SHAPES = {
    "small": {"BATCH": 1, "HEADS": 2, "SEQ": 8, "HEAD_DIM": 16, "DTYPE": "float32"},
    "odd": {"BATCH": 2, "HEADS": 3, "SEQ": 197, "HEAD_DIM": 80},
    "vit": {"BATCH": 64, "HEADS": 12, "SEQ": 197},
}


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scale = q.shape[-1] ** -0.5
        scores = torch.matmul(q.float(), k.float().transpose(-2, -1)) * scale
        probs = torch.softmax(scores, dim=-1).to(q.dtype)
        return torch.matmul(probs, v)


# ---- kernels ----


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_mat0_bmm_amax_sum_etc(k_ptr, q_ptr, v_ptr, bmm_1_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, DOT_FP32: tl.constexpr):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [1024 x 256 x 64] @ [64 x 256]"""
    M = 256
    N = 256
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
        a_tmp1 = tl.load(q_ptr + (rka + 64*rm + 16384*pid_b)).to(tl.float32)
        a = a_tmp1.to(tl.bfloat16)
        b_tmp1 = tl.load(k_ptr + (rkb + 64*rn + 16384*pid_b)).to(tl.float32)
        b = b_tmp1.to(tl.bfloat16)
        if DOT_FP32:  # the CPU interpreter multiplies bf16 wrongly: exact fp32 products instead
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
        else:
            acc = tl.dot(a, b, acc)
    e_tmp1 = acc
    rindex = rn
    rnumel = 256
    e_tmp2 = (e_tmp1 * 0.125)
    e_tmp3 = tl.max(e_tmp2, 1)[:, None]
    e_tmp4 = tl.sum((e_tmp2 != e_tmp2).to(tl.int32), 1)[:, None] > 0
    e_tmp5 = tl.where(e_tmp4, float("nan"), e_tmp3)
    e_tmp6 = (e_tmp2 - e_tmp5)
    e_tmp7 = tl.exp(e_tmp6)
    e_tmp8 = tl.sum(e_tmp7, 1)[:, None]
    e_tmp9 = (e_tmp7 / e_tmp8)
    e_tmp10 = e_tmp9.to(tl.bfloat16).to(tl.float32)
    # the chained GEMM on this tile (aten.bmm: K = the first GEMM's 256 columns, in registers)
    rd = tl.arange(0, 64)[None, :]
    rk2 = tl.arange(0, BLOCK_N)[:, None]
    c_tmp1 = tl.load(v_ptr + (64*rk2 + rd + 16384*pid_b)).to(tl.float32)
    p2 = (e_tmp10).to(tl.bfloat16)
    b2 = (c_tmp1).to(tl.bfloat16)
    if DOT_FP32:  # the CPU interpreter multiplies bf16 wrongly: exact fp32 products instead
        acc2 = tl.dot(p2.to(tl.float32), b2.to(tl.float32))
    else:
        acc2 = tl.dot(p2, b2)
    d_tmp1 = acc2
    d_tmp2 = d_tmp1.to(tl.bfloat16).to(tl.float32)
    tl.store(bmm_1_ptr + (64*rm + rd + 16384*pid_b), d_tmp2.to(tl.bfloat16))


_egg_mat0_bmm_amax_sum_etc_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_bmm_amax_sum_etc_launch(k, q, v):
    """matmul: bmm, amax, sum_1, bmm_1_a, bmm_1: aten.bmm [1024 x 256 x 64] @ [64 x 256]"""
    global _egg_mat0_bmm_amax_sum_etc_launch_k0
    bmm_1 = torch.empty_strided((1024, 256, 64), (16384, 64, 1), dtype=torch.bfloat16, device=k.device)
    if _egg_mat0_bmm_amax_sum_etc_launch_k0 is not None and _egg_mat0_bmm_amax_sum_etc_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(k, q, v, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_launch_k0[1][(4096, 1, 1)](k, q, v, bmm_1, 64, 256, 64, 8, k.device.type == "cpu")
    elif k.device.type == "cuda" and _egg_aligned(k, q, v, bmm_1):
        _egg_mat0_bmm_amax_sum_etc_launch_k0 = (torch.cuda.current_device(), _egg_mat0_bmm_amax_sum_etc[(4096,)](
            k, q, v, bmm_1,
            BLOCK_M=64, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, DOT_FP32=k.device.type == "cpu", num_warps=4, num_stages=3,
        ))
    else:
        _egg_mat0_bmm_amax_sum_etc[(4096,)](
            k, q, v, bmm_1,
            BLOCK_M=64, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, DOT_FP32=k.device.type == "cpu", num_warps=4, num_stages=3,
        )
    return (bmm_1,)


# ---- the candidate ----


class ModelNew(Model):
    """matmuls as Triton kernels with their operand prologues and epilogues fused; a GEMM whose A operand is another GEMM's epilogue tile (attention's P @ V) runs in that GEMM's kernel, the intermediate never written: 1 Triton kernel launch(es) per call"""

    def __init__(self):
        super().__init__()
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        pass

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((64, 16, 256, 64), torch.bfloat16, (64, 16, 256, 64), torch.bfloat16, (64, 16, 256, 64), torch.bfloat16, )."""
    q = inputs[0]
    k = inputs[1]
    v = inputs[2]
    if (q.shape != (64, 16, 256, 64) or q.dtype != torch.bfloat16) or (k.shape != (64, 16, 256, 64) or k.dtype != torch.bfloat16) or (v.shape != (64, 16, 256, 64) or v.dtype != torch.bfloat16):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((q.shape, q.dtype)) + str((k.shape, k.dtype)) + str((v.shape, v.dtype)))
    if q.stride() != (262144, 16384, 64, 1):
        q = torch.empty_strided((64, 16, 256, 64), (262144, 16384, 64, 1), dtype=q.dtype, device=q.device).copy_(q)
    if k.stride() != (262144, 16384, 64, 1):
        k = torch.empty_strided((64, 16, 256, 64), (262144, 16384, 64, 1), dtype=k.dtype, device=k.device).copy_(k)
    if v.stride() != (262144, 16384, 64, 1):
        v = torch.empty_strided((64, 16, 256, 64), (262144, 16384, 64, 1), dtype=v.dtype, device=v.device).copy_(v)
    _dev = q.device
    bmm_1, = _egg_mat0_bmm_amax_sum_etc_launch(k, q, v)
    return bmm_1.view((64, 16, 256, 64))
