"""Fused residual add + LayerNorm: r = x + residual; y = LayerNorm(r); returns (y, r), bf16.

Where it occurs: pre-LN transformers that use LayerNorm rather than RMSNorm (GPT-2, GPT-J,
GPT-NeoX/Pythia, Falcon, Phi-2, StarCoder, OPT, BLOOM, ViT/CLIP encoders) add the sublayer output
to the residual stream and normalise the sum before the next sublayer, in training and in
inference. The new residual stream must be returned too (the next block adds to it); this is
the op that flash-attn's ``dropout_add_layer_norm`` and Apex's fused LayerNorm fuse (here without
dropout: inference, or training with dropout 0 as in most LLM pre-training).

Sizes that matter: hidden 4096 (GPT-J-6B, Pythia-6.9B) over 8192 tokens of a training
micro-batch or a prefill (production: TOKENS=8192 x HIDDEN=4096, bf16). The ``decode`` set is 64
tokens.

Character: memory bound; two reads and two writes per element, a mean and a variance per row.
Gain and bias are random (trained values, not 1 and 0) so a kernel that drops them fails.

Bytes moved at production: reads x and residual (2 x 64 MiB), writes y and the new residual
(2 x 64 MiB), plus 16 KiB of gain and bias = 268.5 MB.
"""

import torch
import torch.nn as nn

TOKENS = 8192
HIDDEN = 4096
EPS = 1e-5
DTYPE = "bfloat16"
SHAPES = {
    "small": {"TOKENS": 6, "HIDDEN": 320, "DTYPE": "float32"},
    "odd": {"TOKENS": 37, "HIDDEN": 2561},
    "decode": {"TOKENS": 64},
}


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float, dtype: str) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, eps=eps, dtype=getattr(torch, dtype))
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.1 * torch.randn(hidden_size))
            self.norm.bias.copy_(0.1 * torch.randn(hidden_size))

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        residual = x + residual
        return self.norm(residual), residual


def get_inputs():
    dtype = getattr(torch, DTYPE)
    residual = torch.randn(TOKENS, HIDDEN) * 2.0 + 0.5
    x = torch.randn(TOKENS, HIDDEN)
    return [x.to(dtype), residual.to(dtype)]


def get_init_inputs():
    return [HIDDEN, EPS, DTYPE]
