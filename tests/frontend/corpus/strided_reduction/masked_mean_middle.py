"""sentence-transformers' mean pooling: ``sum(token_embeddings * mask[..., None], 1) /
clamp(mask.sum(1), min=1e-9)``: two sums over the middle (sequence) dimension of [batch, seq,
hidden], the mask expanded with ``unsqueeze(-1).expand(...).float()``."""

import torch
import torch.nn as nn

BATCH = 64
SEQ = 256
HIDDEN = 768
SHAPES = {"small": {"BATCH": 3, "SEQ": 7, "HIDDEN": 24}}


class Model(nn.Module):
    def forward(self, token_embeddings: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
        summed = torch.sum(token_embeddings * input_mask_expanded, 1)
        counts = torch.clamp(input_mask_expanded.sum(1), min=1e-9)
        return summed / counts


def get_inputs():
    lengths = torch.randint(1, SEQ + 1, (BATCH, 1))
    return [torch.randn(BATCH, SEQ, HIDDEN), (torch.arange(SEQ)[None, :] < lengths).long()]


def get_init_inputs():
    return []
