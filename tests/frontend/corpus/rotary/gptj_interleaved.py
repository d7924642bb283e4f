"""GPT-J's interleaved rotary (transformers ``modeling_gptj``): sin/cos gathered from a sinusoid
table by position ids and split, ``repeat_interleave(.., 2, 3)``, and ``rotate_every_two`` with
strided slices ``x[:, :, :, ::2]`` / ``x[:, :, :, 1::2]`` re-interleaved by ``torch.stack((-x2,
x1), dim=-1).flatten(-2)``. q in [batch, seq, heads, rotary_dim]."""

import torch
import torch.nn as nn

BATCH = 4
SEQ = 2048
N_HEADS = 16
ROTARY_DIM = 64
MAX_POSITIONS = 2048
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 5, "N_HEADS": 2, "ROTARY_DIM": 16, "MAX_POSITIONS": 32, "DTYPE": "float32"}}


def create_sinusoidal_positions(num_pos: int, dim: int) -> torch.Tensor:
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
    sinusoid_inp = torch.arange(num_pos, dtype=torch.int64).float()[:, None] * inv_freq
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def apply_rotary_pos_emb(tensor: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (tensor * cos) + (rotate_every_two(tensor) * sin)


class Model(nn.Module):
    def __init__(self, max_positions: int, rotary_dim: int) -> None:
        super().__init__()
        embed_positions = create_sinusoidal_positions(max_positions, rotary_dim)
        self.register_buffer("embed_positions", embed_positions, persistent=False)

    def forward(self, query: torch.Tensor, key: torch.Tensor, position_ids: torch.Tensor):
        sincos = self.embed_positions[position_ids]
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        return apply_rotary_pos_emb(query, sin, cos), apply_rotary_pos_emb(key, sin, cos)


def get_inputs():
    dtype = getattr(torch, DTYPE)
    q = torch.randn(BATCH, SEQ, N_HEADS, ROTARY_DIM).to(dtype)
    k = torch.randn(BATCH, SEQ, N_HEADS, ROTARY_DIM).to(dtype)
    start = torch.randint(0, MAX_POSITIONS - SEQ + 1, (BATCH, 1))
    return [q, k, start + torch.arange(SEQ)]


def get_init_inputs():
    return [MAX_POSITIONS, ROTARY_DIM]
