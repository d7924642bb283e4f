"""Meta's reference LLaMA rotary (``llama/model.py``): a complex ``freqs_cis`` table built with
``torch.polar``, sliced ``freqs_cis[start_pos : start_pos + seqlen]``, and ``view_as_complex(xq
.float().reshape(*xq.shape[:-1], -1, 2))`` multiplied by it, ``view_as_real(..).flatten(3)``,
``type_as(xq)``. Interleaved pairs; q/k in [batch, seq, heads, head_dim]."""

import torch
import torch.nn as nn

BATCH = 4
SEQ = 2048
N_HEADS = 32
N_KV_HEADS = 8
HEAD_DIM = 128
MAX_SEQ = 4096
START_POS = 0
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 4, "N_HEADS": 4, "N_KV_HEADS": 2, "HEAD_DIM": 16, "MAX_SEQ": 16,
                    "START_POS": 5, "DTYPE": "float32"}}


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class Model(nn.Module):
    def __init__(self, head_dim: int, max_seq: int) -> None:
        super().__init__()
        self.register_buffer("freqs_cis", precompute_freqs_cis(head_dim, max_seq * 2), persistent=False)

    def forward(self, xq: torch.Tensor, xk: torch.Tensor, start_pos: int):
        seqlen = xq.shape[1]
        freqs_cis = self.freqs_cis[start_pos : start_pos + seqlen]
        return apply_rotary_emb(xq, xk, freqs_cis)


def get_inputs():
    dtype = getattr(torch, DTYPE)
    xq = torch.randn(BATCH, SEQ, N_HEADS, HEAD_DIM).to(dtype)
    xk = torch.randn(BATCH, SEQ, N_KV_HEADS, HEAD_DIM).to(dtype)
    # a constant: the graph is specialised to the start position it was captured with
    return [xq, xk, START_POS]


def get_init_inputs():
    return [HEAD_DIM, MAX_SEQ]
