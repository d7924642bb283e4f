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


def get_inputs():
    x = torch.randn(TOKENS, IN_FEATURES)
    return [x.to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, GROUP, DTYPE]
