"""GPT-NeoX / Pythia partial rotary (transformers ``modeling_gpt_neox`` as it was through v4.3x):
cos/sin sliced from a cache, ``self.cos_cached[:seq_len]``, only the first ``rotary_ndims =
head_dim * rotary_pct`` channels rotated (``query[..., :rotary_ndims]``), the rest passed through
and re-joined with ``torch.cat((query_rot, query_pass), dim=-1)``. [batch, heads, seq, head_dim]."""

import torch
import torch.nn as nn

BATCH = 4
SEQ = 2048
N_HEADS = 32
HEAD_DIM = 128
ROTARY_NDIMS = 32
MAX_POSITIONS = 4096
DTYPE = "float16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 5, "N_HEADS": 2, "HEAD_DIM": 24, "ROTARY_NDIMS": 8, "MAX_POSITIONS": 16,
                    "DTYPE": "float32"}}


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def __init__(self, rotary_ndims: int, max_positions: int) -> None:
        super().__init__()
        self.rotary_ndims = rotary_ndims
        inv_freq = 1.0 / (10000 ** (torch.arange(0, rotary_ndims, 2).float() / rotary_ndims))
        t = torch.arange(max_positions, dtype=inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, query: torch.Tensor, key: torch.Tensor):
        seq_len = query.shape[-2]
        cos = self.cos_cached[:seq_len].to(query.dtype)[None, None]
        sin = self.sin_cached[:seq_len].to(query.dtype)[None, None]
        query_rot, query_pass = query[..., : self.rotary_ndims], query[..., self.rotary_ndims :]
        key_rot, key_pass = key[..., : self.rotary_ndims], key[..., self.rotary_ndims :]
        query_rot = (query_rot * cos) + (rotate_half(query_rot) * sin)
        key_rot = (key_rot * cos) + (rotate_half(key_rot) * sin)
        return torch.cat((query_rot, query_pass), dim=-1), torch.cat((key_rot, key_pass), dim=-1)


def get_inputs():
    dtype = getattr(torch, DTYPE)
    q = torch.randn(BATCH, N_HEADS, SEQ, HEAD_DIM).to(dtype)
    k = torch.randn(BATCH, N_HEADS, SEQ, HEAD_DIM).to(dtype)
    return [q, k]


def get_init_inputs():
    return [ROTARY_NDIMS, MAX_POSITIONS]
