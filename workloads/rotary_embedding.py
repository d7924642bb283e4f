"""Rotary position embedding (RoPE) applied to queries and keys, Llama half-rotation, bf16.

Where it occurs: the attention of every Llama 2/3, Mistral, Qwen2/3, Gemma and DeepSeek layer
rotates q and k by position-dependent angles before attention, in training and inference
(prefill and every decode step). This is vLLM's ``RotaryEmbedding`` form: the cos/sin tables are
precomputed once for every position (fp32 buffers), and each call gathers them by the tokens'
positions, then applies Hugging Face's ``rotate_half`` formula (dimension i pairs with
i + head_dim/2): ``q * cos + rotate_half(q) * sin``. The rotation is computed in fp32 and rounded
to bf16 once, as Meta's Llama reference code and flash-attn's rotary kernel do (rotating in bf16,
as HF does, rounds three times: up to ~2 ulps away from the exact result, past the bf16
tolerance). Queries and keys have different head counts (grouped-query attention).

Sizes that matter: Llama-3-8B: 32 query heads, 8 key/value heads, head_dim 128, rope theta
500000, 8192-position table; 4 sequences x 2048 tokens (production). Positions start at a random
offset per sequence (chunked prefill / continued generation), so a kernel that assumes position
== token index fails. The ``decode`` set is one token for each of 64 sequences; the ``odd`` set
uses head_dim 80 (Phi-2, GPT-NeoX-20B style) and 5/1 heads.

Character: memory bound elementwise with a gather of the cos/sin rows; q and k in one launch.

Bytes moved at production: q (64 MiB) and k (16 MiB) read and written (167.8 MB), positions
(64 KiB) and the fp32 cos/sin rows (8.4 MB, the whole tables or the gathered rows) = 176.2 MB.
"""

import torch
import torch.nn as nn

BATCH = 4
SEQ = 2048
N_HEADS = 32
N_KV_HEADS = 8
HEAD_DIM = 128
MAX_POSITION = 8192
ROPE_THETA = 500000.0
DTYPE = "bfloat16"
SHAPES = {
    "small": {
        "BATCH": 2, "SEQ": 5, "N_HEADS": 4, "N_KV_HEADS": 2, "HEAD_DIM": 16, "MAX_POSITION": 64,
        "DTYPE": "float32",
    },
    "odd": {"BATCH": 3, "SEQ": 37, "N_HEADS": 5, "N_KV_HEADS": 1, "HEAD_DIM": 80, "MAX_POSITION": 301},
    "decode": {"BATCH": 64, "SEQ": 1},
}


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def __init__(self, head_dim: int, max_position: int, rope_theta: float) -> None:
        super().__init__()
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        t = torch.arange(max_position, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor):
        # positions: [batch, seq] int64; q: [batch, seq, n_heads, head_dim]; k: [batch, seq, n_kv_heads, head_dim]
        cos = self.cos_cached[positions].unsqueeze(2)
        sin = self.sin_cached[positions].unsqueeze(2)
        qf, kf = q.float(), k.float()
        q_embed = (qf * cos) + (rotate_half(qf) * sin)
        k_embed = (kf * cos) + (rotate_half(kf) * sin)
        return q_embed.to(q.dtype), k_embed.to(k.dtype)


def get_inputs():
    dtype = getattr(torch, DTYPE)
    start = torch.randint(0, MAX_POSITION - SEQ + 1, (BATCH, 1))
    positions = start + torch.arange(SEQ)
    q = torch.randn(BATCH, SEQ, N_HEADS, HEAD_DIM).to(dtype)
    k = torch.randn(BATCH, SEQ, N_KV_HEADS, HEAD_DIM).to(dtype)
    return [positions, q, k]


def get_init_inputs():
    return [HEAD_DIM, MAX_POSITION, ROPE_THETA]
