"""transformers' LLaMA rotary, whole: ``LlamaRotaryEmbedding.forward`` computes cos/sin from the
position ids inside the forward (``position_ids[..., None].float() * inv_freq``, ``cat((freqs,
freqs))``, ``cos``/``sin``, cast to the activations' dtype), then ``apply_rotary_pos_emb`` rotates q
and k with ``rotate_half`` (two slices and a ``cat``). q/k in [batch, heads, seq, head_dim] with
grouped-query attention (fewer k heads); positions start at an offset (continued generation)."""

import torch
import torch.nn as nn

BATCH = 2
SEQ = 2048
N_HEADS = 32
N_KV_HEADS = 8
HEAD_DIM = 128
ROPE_THETA = 500000.0
START = 0
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 5, "N_HEADS": 4, "N_KV_HEADS": 2, "HEAD_DIM": 16, "START": 3,
                    "DTYPE": "float32"}}


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class Model(nn.Module):
    def __init__(self, head_dim: int, rope_theta: float) -> None:
        super().__init__()
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    def forward(self, q: torch.Tensor, k: torch.Tensor, position_ids: torch.Tensor):
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=q.device, dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = (emb.cos() * self.attention_scaling).to(dtype=q.dtype)
        sin = (emb.sin() * self.attention_scaling).to(dtype=q.dtype)
        return apply_rotary_pos_emb(q, k, cos, sin)


def get_inputs():
    dtype = getattr(torch, DTYPE)
    q = torch.randn(BATCH, N_HEADS, SEQ, HEAD_DIM).to(dtype)
    k = torch.randn(BATCH, N_KV_HEADS, SEQ, HEAD_DIM).to(dtype)
    position_ids = (START + torch.arange(SEQ)).unsqueeze(0).expand(BATCH, -1).contiguous()
    return [q, k, position_ids]


def get_init_inputs():
    return [HEAD_DIM, ROPE_THETA]
