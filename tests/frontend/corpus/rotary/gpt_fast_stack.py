"""gpt-fast's rotary (``model.py``): the complex table stored as real pairs (``torch.stack([real,
imag], -1)``), gathered by ``input_pos``, and ``xshaped = x.float().reshape(*x.shape[:-1], -1, 2)``
rotated with two products re-assembled by ``torch.stack([...], -1).flatten(3)``, ``type_as(x)``."""

import torch
import torch.nn as nn

BATCH = 1
SEQ = 16
N_HEADS = 32
HEAD_DIM = 128
BLOCK_SIZE = 2048
ROPE_BASE = 10000.0
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 3, "N_HEADS": 2, "HEAD_DIM": 16, "BLOCK_SIZE": 24, "DTYPE": "float32"}}


def precompute_freqs_cis(seq_len: int, n_elem: int, base: float) -> torch.Tensor:
    freqs = 1.0 / (base ** (torch.arange(0, n_elem, 2)[: (n_elem // 2)].float() / n_elem))
    t = torch.arange(seq_len, device=freqs.device)
    freqs = torch.outer(t, freqs)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    return torch.stack([freqs_cis.real, freqs_cis.imag], dim=-1)


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
    freqs_cis = freqs_cis.view(1, xshaped.size(1), 1, xshaped.size(3), 2)
    x_out2 = torch.stack(
        [
            xshaped[..., 0] * freqs_cis[..., 0] - xshaped[..., 1] * freqs_cis[..., 1],
            xshaped[..., 1] * freqs_cis[..., 0] + xshaped[..., 0] * freqs_cis[..., 1],
        ],
        -1,
    )
    x_out2 = x_out2.flatten(3)
    return x_out2.type_as(x)


class Model(nn.Module):
    def __init__(self, block_size: int, head_dim: int, rope_base: float) -> None:
        super().__init__()
        self.register_buffer("freqs_cis", precompute_freqs_cis(block_size, head_dim, rope_base), persistent=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor, input_pos: torch.Tensor):
        freqs_cis = self.freqs_cis[input_pos]
        return apply_rotary_emb(q, freqs_cis), apply_rotary_emb(k, freqs_cis)


def get_inputs():
    dtype = getattr(torch, DTYPE)
    q = torch.randn(BATCH, SEQ, N_HEADS, HEAD_DIM).to(dtype)
    k = torch.randn(BATCH, SEQ, N_HEADS, HEAD_DIM).to(dtype)
    start = int(torch.randint(0, BLOCK_SIZE - SEQ + 1, ()))
    return [q, k, torch.arange(start, start + SEQ)]


def get_init_inputs():
    return [BLOCK_SIZE, HEAD_DIM, ROPE_BASE]
