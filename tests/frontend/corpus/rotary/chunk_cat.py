"""Half rotation with ``rotate_half`` written as ``x1, x2 = x.chunk(2, dim=-1); torch.cat((-x2,
x1), dim=-1)`` (the form many ports of the HF code use), cos/sin [seq, head_dim] passed in as the
precomputed ``position_embeddings`` of a layer; q/k in [batch, seq, heads, head_dim]."""

import torch
import torch.nn as nn

BATCH = 4
SEQ = 2048
N_HEADS = 32
HEAD_DIM = 128
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 6, "N_HEADS": 2, "HEAD_DIM": 32, "DTYPE": "float32"}}


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        cos = cos[None, :, None, :]
        sin = sin[None, :, None, :]
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def get_inputs():
    dtype = getattr(torch, DTYPE)
    half = HEAD_DIM // 2
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, half).float() / half))
    freqs = torch.outer(torch.arange(SEQ).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    q = torch.randn(BATCH, SEQ, N_HEADS, HEAD_DIM).to(dtype)
    k = torch.randn(BATCH, SEQ, N_HEADS, HEAD_DIM).to(dtype)
    return [q, k, emb.cos().to(dtype), emb.sin().to(dtype)]


def get_init_inputs():
    return []
