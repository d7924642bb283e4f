"""transformers' ``MistralDecoderLayer`` as the model runs it: the problem's forward computes the
position ids (``arange``, as ``MistralModel`` does without a cache) and ``position_embeddings`` with
``MistralRotaryEmbedding``, then the layer (RMSNorm, q/k/v projections, rotary, SDPA with the causal
flag, o_proj, residual, RMSNorm, SwiGLU MLP, residual). Built from a config with random weights;
nothing is downloaded. Default sizes: Mistral-7B v0.3 (GQA 32/8 heads, no sliding window),
2 x 2048 tokens, bf16."""

import torch
import torch.nn as nn
from transformers import MistralConfig
from transformers.models.mistral.modeling_mistral import MistralDecoderLayer, MistralRotaryEmbedding

BATCH = 2
SEQ = 2048
HIDDEN = 4096
HEADS = 32
KV_HEADS = 8
INTERMEDIATE = 14336
ROPE_THETA = 1000000.0
DTYPE = "bfloat16"
SHAPES = {
    "small": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "HEADS": 4, "KV_HEADS": 2, "INTERMEDIATE": 128, "DTYPE": "float32"},
    "small_fp16": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "HEADS": 4, "KV_HEADS": 2, "INTERMEDIATE": 128,
                   "DTYPE": "float16"},
}


class Model(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_heads: int, intermediate: int, rope_theta: float, dtype: str):
        super().__init__()
        config = MistralConfig(
            hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
            intermediate_size=intermediate, num_hidden_layers=1, rms_norm_eps=1e-5,
            max_position_embeddings=8192, rope_theta=rope_theta, sliding_window=None, attn_implementation="sdpa",
        )
        self.rotary_emb = MistralRotaryEmbedding(config)  # inv_freq stays fp32, as in MistralModel
        self.layer = MistralDecoderLayer(config, layer_idx=0).to(getattr(torch, dtype))
        with torch.no_grad():  # fresh norm gains are exactly 1; trained ones are not (a dropped gain must fail)
            for p in self.layer.parameters():
                if p.dim() == 1:
                    p.add_(0.1 * torch.randn_like(p))
        self.eval()  # dropout is random in training mode: no candidate could reproduce it

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = hidden_states.shape
        position_ids = torch.arange(seq, device=hidden_states.device).unsqueeze(0).expand(batch, -1)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        return self.layer(hidden_states, position_ids=position_ids, position_embeddings=position_embeddings)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, HEADS, KV_HEADS, INTERMEDIATE, ROPE_THETA, DTYPE]
