# EGG expert candidate for int4_weight_only_linear.py (agents.expert: loop-level IR + templates, no LLM)
# structure: Triton mm with its operand prologue in the tile loads, K in 2 phases (packed operand loaded once)
# variant: fused: library ops stay torch calls, the ops around them are fused
#   _egg_mat0_mm: BLOCK_M=16 BLOCK_N=64 BLOCK_K=128 GROUP_M=8 num_warps=4 num_stages=4 SPLIT_K=1 K_PHASES=2
# principles: parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/fuse-dequant-into-gemm, algorithm-structure/split-k-for-small-mn, algorithm-structure/unpack-by-k-phase
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"BLOCK_K": 128, "BLOCK_M": 16, "BLOCK_N": 64, "GROUP_M": 8, "K_PHASES": 2, "SPLIT_K": 1, "num_stages": 4, "num_warps": 4}, "kernel": "_egg_mat0_mm", "template": "matmul"}], "shape_set": "default", "specialised": ["default"], "variant": "fused", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


"""Weight-only int4 linear (W4A16): y = x @ dequant(W)^T, two 4-bit weights per byte, group-wise scales.

Where it occurs: Llama/Mistral/Qwen inference with 4-bit weight-only quantization (GPTQ and AWQ
checkpoints, torchao ``int4_weight_only``, llama.cpp-style Q4 groups, vLLM/TensorRT-LLM W4A16):
every projection of the model, decode most of all, where the GEMM is a memory-bound GEMV-like
product and a quarter of the bf16 weight bytes is the whole point. Weights are symmetric int4 in
[-8, 7] stored with an offset of 8 as unsigned nibbles, two per byte (even input features in the
low nibble), with one bf16 scale per output row and group of ``GROUP`` input features, quantised
from N(0, 0.02) weights at construction. The reference is the naive unpack-dequantise-matmul a
model would write (masks, shifts, ``torch.stack`` to interleave, a reshape per group); it
materialises the bf16 weight, which is exactly what a fused kernel must avoid.

Sizes that matter: Llama-3-8B's up projection (in 4096 -> out 14336) for a decode batch of 16
tokens, 128-wide groups (production, GPTQ/AWQ's default group). The ``odd`` set (in 1000, out
1501, groups of 40) has rows that are not 16-byte aligned and a group that is not a power of two.

Character: at production memory bound on the packed weight (29.4 MB); about 64 FLOP per byte of
weight. The reference moves ~9x more (it writes and re-reads an int8 copy per nibble, then a bf16
copy of the weight).

Bytes moved at production: packed weight 29.36 MB + scales 0.92 MB + x 131 KB + y 459 KB = 30.87 MB.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 16
IN_FEATURES = 4096
OUT_FEATURES = 14336
GROUP = 128
DTYPE = "bfloat16"
SHAPES = {
    "small": {"TOKENS": 3, "IN_FEATURES": 256, "OUT_FEATURES": 48, "GROUP": 64, "DTYPE": "float32"},
    "odd": {"TOKENS": 7, "IN_FEATURES": 1000, "OUT_FEATURES": 1501, "GROUP": 40},
}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, group: int, dtype: str) -> None:
        super().__init__()
        self.in_features, self.out_features, self.group = in_features, out_features, group
        w = torch.randn(out_features, in_features // group, group) * 0.02
        scales = w.abs().amax(dim=-1) / 7.0
        q = (torch.round(w / scales[..., None]).clamp(-8, 7) + 8).to(torch.uint8).reshape(out_features, in_features)
        self.register_buffer("qweight", q[:, 0::2] | (q[:, 1::2] << 4))  # [out, in / 2], even features low
        self.register_buffer("scales", scales.to(getattr(torch, dtype)))  # [out, in / group]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low = (self.qweight & 0xF).to(torch.int8) - 8
        high = (self.qweight >> 4).to(torch.int8) - 8
        w = torch.stack([low, high], dim=-1).reshape(self.out_features, self.in_features)
        w = w.to(x.dtype).reshape(self.out_features, -1, self.group) * self.scales.unsqueeze(-1)
        return F.linear(x, w.reshape(self.out_features, self.in_features))


# ---- kernels ----


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_mat0_mm(b_qweight_ptr, b_scales_ptr, x_ptr, mm_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, DOT_FP32: tl.constexpr):
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
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # the operand tiles are computed from their index maps (views, prologues) at every K step
    s_next = tl.load(b_scales_ptr + (32*rn1 + 0)).to(tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # 2 K phases: rkb (and rka, unless A is loaded whole and split) index j of k = 2 * j + phase
        rka = k0 + tl.arange(0, BLOCK_K)[None, :]
        rkb = k0 // 2 + tl.arange(0, BLOCK_K // 2)[:, None]
        a_tmp1 = tl.load(x_ptr + (rka + 4096*rm)).to(tl.float32)
        a = a_tmp1.to(tl.bfloat16)
        a_p = tl.reshape(a, [BLOCK_M, BLOCK_K // 2, 2])
        a_s0_0_0, a_s0_0_1 = tl.split(a_p)
        a0 = a_s0_0_0
        a1 = a_s0_0_1
        b_tmp1 = tl.load(b_qweight_ptr + (rkb + 2048*rn))
        # the group's scale is constant over this K step: dot the exact integer weights, scale the partial sums
        s = s_next
        s_next = tl.load(b_scales_ptr + (32*rn1 + tl.minimum(((k0 + BLOCK_K) // 2) // 64, 31))).to(tl.float32)
        b0 = (((b_tmp1 & 15).to(tl.int16) | 0x4300).to(tl.bfloat16, bitcast=True) - 136.0)
        b1 = (((b_tmp1 >> 4).to(tl.int16) | 0x4300).to(tl.bfloat16, bitcast=True) - 136.0)
        if DOT_FP32:  # the CPU interpreter multiplies bf16 wrongly: exact fp32 products instead
            part = tl.dot(a0.to(tl.float32), b0.to(tl.float32))
            part = tl.dot(a1.to(tl.float32), b1.to(tl.float32), part)
        else:
            part = tl.dot(a0, b0)
            part = tl.dot(a1, b1, part)
        acc += part * s[None, :]
    e_tmp1 = acc
    e_tmp2 = e_tmp1.to(tl.bfloat16).to(tl.float32)
    tl.store(mm_ptr + (14336*rm + rn), e_tmp2.to(tl.bfloat16))


_egg_mat0_mm_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat0_mm_launch(b_qweight, b_scales, x):
    """matmul: mm: aten.mm [16 x 4096] @ [4096 x 14336]"""
    global _egg_mat0_mm_launch_k0
    mm = torch.empty_strided((16, 14336), (14336, 1), dtype=torch.bfloat16, device=b_qweight.device)
    if _egg_mat0_mm_launch_k0 is not None and _egg_mat0_mm_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(b_qweight, b_scales, x, mm):
        _egg_mat0_mm_launch_k0[1][(224, 1, 1)](b_qweight, b_scales, x, mm, 16, 64, 128, 8, b_qweight.device.type == "cpu")
    elif b_qweight.device.type == "cuda" and _egg_aligned(b_qweight, b_scales, x, mm):
        _egg_mat0_mm_launch_k0 = (torch.cuda.current_device(), _egg_mat0_mm[(224,)](
            b_qweight, b_scales, x, mm,
            BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=8, DOT_FP32=b_qweight.device.type == "cpu", num_warps=4, num_stages=4,
        ))
    else:
        _egg_mat0_mm[(224,)](
            b_qweight, b_scales, x, mm,
            BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=8, DOT_FP32=b_qweight.device.type == "cpu", num_warps=4, num_stages=4,
        )
    return (mm,)


# ---- the candidate ----


class ModelNew(Model):
    """library ops stay torch calls, the ops around them are fused: 1 Triton kernel launch(es) per call"""

    def __init__(self, in_features: int, out_features: int, group: int, dtype: str):
        super().__init__(in_features, out_features, group, dtype)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        self._egg_owners = (self,)

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((16, 4096), torch.bfloat16, )."""
    owners = self._egg_owners
    b_qweight = owners[0].qweight
    b_scales = owners[0].scales
    x = inputs[0]
    if (x.shape != (16, 4096) or x.dtype != torch.bfloat16):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((x.shape, x.dtype)))
    if x.stride() != (4096, 1):
        x = torch.empty_strided((16, 4096), (4096, 1), dtype=x.dtype, device=x.device).copy_(x)
    _dev = x.device
    mm, = _egg_mat0_mm_launch(b_qweight, b_scales, x)
    return mm
