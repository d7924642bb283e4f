# EGG expert candidate for int8_weight_only_linear.py (agents.expert: loop-level IR + templates, no LLM)
# structure: Triton mm with its operand prologue in the tile loads
# variant: fused: library ops stay torch calls, the ops around them are fused
#   _egg_mat0_mm: BLOCK_M=16 BLOCK_N=64 BLOCK_K=128 GROUP_M=8 num_warps=4 num_stages=4 SPLIT_K=1
# principles: parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/fuse-dequant-into-gemm, algorithm-structure/split-k-for-small-mn
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"BLOCK_K": 128, "BLOCK_M": 16, "BLOCK_N": 64, "GROUP_M": 8, "SPLIT_K": 1, "num_stages": 4, "num_warps": 4}, "kernel": "_egg_mat0_mm", "template": "matmul"}], "shape_set": "default", "specialised": ["default"], "variant": "fused", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


"""Weight-only int8 linear (W8A16): y = x @ (W_int8 * scale[:, None])^T, bf16 activations.

Where it occurs: Llama/Mistral/Qwen inference with int8 weight-only quantization (torchao
``int8_weight_only``, TensorRT-LLM / vLLM W8A16, bitsandbytes-style per-channel int8): every
projection of the model, decode most of all, where the GEMM is a memory-bound GEMV-like product
and halving the weight bytes is the whole point. Weights are symmetric per-output-channel int8
in [-127, 127] with bf16 scales, quantised from N(0, 0.02) weights at construction. The
reference is the naive dequantise-then-matmul a model would write; it materialises the bf16
weight, which is exactly what a fused kernel must avoid.

Sizes that matter: Llama-3-8B's up projection (in 4096 -> out 14336) for a decode batch of 16
tokens (production). The ``prefill`` set (1024 tokens) is compute bound instead; the ``odd`` set
(in 999, out 1501) has rows that are not 16-byte aligned.

Character: at production memory bound on the int8 weight (58.7 MB); arithmetic intensity about
32 FLOP/byte. The reference moves ~5x more (it writes and re-reads a bf16 copy of the weight).

Bytes moved at production: weight 58.7 MB + scales 28.7 KB + x 131 KB + y 459 KB = 59.3 MB.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 16
IN_FEATURES = 4096
OUT_FEATURES = 14336
DTYPE = "bfloat16"
SHAPES = {
    "small": {"TOKENS": 3, "IN_FEATURES": 64, "OUT_FEATURES": 48, "DTYPE": "float32"},
    "odd": {"TOKENS": 7, "IN_FEATURES": 999, "OUT_FEATURES": 1501},
    "prefill": {"TOKENS": 1024},
}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, dtype: str) -> None:
        super().__init__()
        w = torch.randn(out_features, in_features) * 0.02
        scale = w.abs().amax(dim=1) / 127.0
        w_int8 = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8)
        self.register_buffer("weight", w_int8)
        self.register_buffer("scale", scale.to(getattr(torch, dtype)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight.to(x.dtype) * self.scale.unsqueeze(1)
        return F.linear(x, w)


# ---- kernels ----


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_mat0_mm(b_scale_ptr, b_weight_ptr, x_ptr, mm_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, DOT_FP32: tl.constexpr):
    """matmul: mm: aten.mm [16 x 4096] @ [4096 x 14336]"""
    M = 16
    N = 14336
    K = 4096
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
    # a load along the columns alone (a scale row) is a vector load, expanded into the tile
    rn1 = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N))
    b_tmp3 = tl.load(b_scale_ptr + (rn1))[None, :].to(tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # the operand tiles are computed from their index maps (views, prologues) at every K step
    for k0 in range(0, K, BLOCK_K):
        rka = k0 + tl.arange(0, BLOCK_K)[None, :]
        rkb = k0 + tl.arange(0, BLOCK_K)[:, None]
        a_tmp1 = tl.load(x_ptr + (rka + 4096*rm)).to(tl.float32)
        a = a_tmp1.to(tl.bfloat16)
        b_tmp1 = tl.load(b_weight_ptr + (rkb + 4096*rn))
        b_tmp2 = (b_tmp1.to(tl.float32)).to(tl.bfloat16).to(tl.float32)
        b_tmp4 = (b_tmp2 * b_tmp3).to(tl.bfloat16).to(tl.float32)
        b = b_tmp4.to(tl.bfloat16)
        if DOT_FP32:  # the CPU interpreter multiplies bf16 wrongly: exact fp32 products instead
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
        else:
            acc = tl.dot(a, b, acc)
    e_tmp1 = acc
    e_tmp2 = e_tmp1.to(tl.bfloat16).to(tl.float32)
    tl.store(mm_ptr + (14336*rm + rn), e_tmp2.to(tl.bfloat16))


_egg_mat0_mm_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_mm_launch(b_scale, b_weight, x):
    """matmul: mm: aten.mm [16 x 4096] @ [4096 x 14336]"""
    global _egg_mat0_mm_launch_k0
    mm = torch.empty_strided((16, 14336), (14336, 1), dtype=torch.bfloat16, device=b_scale.device)
    if _egg_mat0_mm_launch_k0 is not None and _egg_mat0_mm_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(b_scale, b_weight, x, mm):
        _egg_mat0_mm_launch_k0[1][(224, 1, 1)](b_scale, b_weight, x, mm, 16, 64, 128, 8, b_scale.device.type == "cpu")
    elif b_scale.device.type == "cuda" and _egg_aligned(b_scale, b_weight, x, mm):
        _egg_mat0_mm_launch_k0 = (torch.cuda.current_device(), _egg_mat0_mm[(224,)](
            b_scale, b_weight, x, mm,
            BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=8, DOT_FP32=b_scale.device.type == "cpu", num_warps=4, num_stages=4,
        ))
    else:
        _egg_mat0_mm[(224,)](
            b_scale, b_weight, x, mm,
            BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=8, DOT_FP32=b_scale.device.type == "cpu", num_warps=4, num_stages=4,
        )
    return (mm,)


# ---- the candidate ----


class ModelNew(Model):
    """library ops stay torch calls, the ops around them are fused: 1 Triton kernel launch(es) per call"""

    def __init__(self, in_features: int, out_features: int, dtype: str):
        super().__init__(in_features, out_features, dtype)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        self._egg_owners = (self,)

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((16, 4096), torch.bfloat16, )."""
    owners = self._egg_owners
    b_weight = owners[0].weight
    b_scale = owners[0].scale
    x = inputs[0]
    if (x.shape != (16, 4096) or x.dtype != torch.bfloat16):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((x.shape, x.dtype)))
    if x.stride() != (4096, 1):
        x = torch.empty_strided((16, 4096), (4096, 1), dtype=x.dtype, device=x.device).copy_(x)
    _dev = x.device
    mm, = _egg_mat0_mm_launch(b_scale, b_weight, x)
    return mm
