"""Scaled, causally masked softmax over attention scores [batch, heads, seq, seq], bf16.

Where it occurs: the unfused ("eager") attention path of GPT-style decoders in training and in
prefill: Megatron-LM's ``ScaledUpperTriangMaskedSoftmax`` / ``FusedScaleMaskSoftmax``, Hugging
Face eager attention, and any model run where flash attention is not available (custom masks,
older GPUs, debugging). The reference is Megatron's unfused path: upcast the scores to fp32,
multiply by 1/sqrt(head_dim), fill the strictly upper triangle (future keys) with -inf, softmax
over keys, downcast to bf16.

Sizes that matter: 2 sequences x 16 heads x 1024 tokens, head_dim 128 (production; a GPT-2-medium
/ 1B-class training micro-batch). Rows are short near the top of the matrix and long at the
bottom; the ``odd`` set uses 197 tokens so no row length is a power of two.

Character: memory bound row softmax; half of every matrix is masked, so a kernel can skip reading
it (the output there is exactly 0). Scores are drawn with std 3 after scaling, giving the peaked
rows of a trained model rather than uniform ones.

Bytes moved at production: read 67.1 MB of scores, write 67.1 MB of probabilities = 134.2 MB
(about 100.7 MB if the masked upper triangle is not read).
"""

import torch
import torch.nn as nn

BATCH = 2
HEADS = 16
SEQ = 1024
HEAD_DIM = 128
DTYPE = "bfloat16"
SHAPES = {
    "small": {"BATCH": 1, "HEADS": 2, "SEQ": 24, "DTYPE": "float32"},
    "odd": {"BATCH": 1, "HEADS": 3, "SEQ": 197},
}


class Model(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        seq_q, seq_k = scores.shape[-2], scores.shape[-1]
        x = scores.float() * self.scale
        mask = torch.ones(seq_q, seq_k, dtype=torch.bool, device=scores.device).triu(1)
        x = x.masked_fill(mask, float("-inf"))
        probs = torch.softmax(x, dim=-1)
        return probs.to(scores.dtype)


def get_inputs():
    # Raw q.k scores: std 3 * sqrt(head_dim), i.e. std 3 after scaling.
    scores = torch.randn(BATCH, HEADS, SEQ, SEQ) * (3.0 * HEAD_DIM**0.5)
    return [scores.to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HEAD_DIM**-0.5]
