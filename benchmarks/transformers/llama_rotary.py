"""transformers' ``apply_rotary_pos_emb`` (``rotate_half`` = ``chunk`` + ``cat``) at LLaMA-3-8B size.

q [2, 32, 2048, 128] and k [2, 8, 2048, 128] (GQA), cos/sin [2, 2048, 128], bf16. Bytes at
production: q (32 MiB) and k (8 MiB) read and written (80 MiB) + cos and sin read once (2 MiB) =
82 MiB = 85.98 MB; at 4.3 TB/s that is 0.020 ms (the memory roofline).
"""

import torch
import torch.nn as nn
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

BATCH = 2
SEQ = 2048
HEADS = 32
KV_HEADS = 8
HEAD_DIM = 128
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 1, "SEQ": 8, "HEADS": 4, "KV_HEADS": 2, "HEAD_DIM": 16, "DTYPE": "float32"}}


class Model(nn.Module):
    def forward(self, q, k, cos, sin):
        return apply_rotary_pos_emb(q, k, cos, sin)


def get_inputs():
    dt = getattr(torch, DTYPE)
    angle = torch.rand(BATCH, SEQ, HEAD_DIM) * 6.2831853
    return [
        torch.randn(BATCH, HEADS, SEQ, HEAD_DIM).to(dt),
        torch.randn(BATCH, KV_HEADS, SEQ, HEAD_DIM).to(dt),
        angle.cos().to(dt),
        angle.sin().to(dt),
    ]


def get_init_inputs():
    return []
