"""transformers' own ``LlamaMLP`` (SwiGLU: down(silu(gate(x)) * up(x))) at LLaMA-3-8B size, bf16.

x [2, 2048, 4096], gate/up 4096 -> 14336, down 14336 -> 4096: 3 x 2 x 4096 x 4096 x 14336 =
1.44 TFLOP per call (matmul bound).
"""

import torch
import torch.nn as nn
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaMLP


# the LLaMA-3-8B config, built offline (a problem file is copied alone into its run: no sibling imports)
def llama_config(hidden: int, intermediate: int, heads: int, kv_heads: int, dtype: str) -> LlamaConfig:
    config = LlamaConfig(
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=hidden // heads,
        num_hidden_layers=1,
        vocab_size=128,
        rope_theta=500000.0,
        rms_norm_eps=1e-5,
        max_position_embeddings=8192,
        torch_dtype=dtype,
    )
    config._attn_implementation = "sdpa"
    return config


BATCH = 2
SEQ = 2048
HIDDEN = 4096
INTERMEDIATE = 14336
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "INTERMEDIATE": 128, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, hidden: int, intermediate: int, dtype: str) -> None:
        super().__init__()
        self.mlp = LlamaMLP(llama_config(hidden, intermediate, 32 if hidden >= 4096 else 4, 8 if hidden >= 4096 else 2, dtype))
        self.mlp.to(getattr(torch, dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE, DTYPE]
