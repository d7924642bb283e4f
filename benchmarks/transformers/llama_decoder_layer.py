"""transformers' own ``LlamaDecoderLayer`` at LLaMA-3-8B size (2 x 2048 tokens, bf16, SDPA attention).

The rotary embedding (``LlamaRotaryEmbedding``) computes ``position_embeddings`` inside ``forward``,
as ``LlamaModel`` does; the attention is causal (no mask tensor: SDPA's causal path).
"""

import torch
import torch.nn as nn
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding


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
HEADS = 32
KV_HEADS = 8
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "INTERMEDIATE": 128, "HEADS": 4, "KV_HEADS": 2,
                    "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, hidden: int, intermediate: int, heads: int, kv_heads: int, dtype: str) -> None:
        super().__init__()
        config = llama_config(hidden, intermediate, heads, kv_heads, dtype)
        self.layer = LlamaDecoderLayer(config, layer_idx=0)
        self.rotary = LlamaRotaryEmbedding(config)
        with torch.no_grad():  # trained norm gains are not 1
            for norm in (self.layer.input_layernorm, self.layer.post_attention_layernorm):
                norm.weight.copy_(1.0 + 0.1 * torch.randn(hidden))
        self.to(getattr(torch, dtype))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        position_ids = torch.arange(hidden_states.shape[1], device=hidden_states.device).unsqueeze(0)
        position_embeddings = self.rotary(hidden_states, position_ids)
        return self.layer(hidden_states, position_ids=position_ids, position_embeddings=position_embeddings)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE, HEADS, KV_HEADS, DTYPE]
