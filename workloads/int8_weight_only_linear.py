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


def get_inputs():
    x = torch.randn(TOKENS, IN_FEATURES)
    return [x.to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, DTYPE]
