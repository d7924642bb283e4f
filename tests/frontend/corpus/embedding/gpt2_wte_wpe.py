"""GPT-2's input embedding (transformers ``GPT2Model.forward``; nanoGPT's ``tok_emb + pos_emb``):
``self.wte(input_ids) + self.wpe(position_ids)`` with ``position_ids = torch.arange(seq)``."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 1024
VOCAB = 50257
N_POSITIONS = 1024
EMBED = 768
SHAPES = {"small": {"BATCH": 2, "SEQ": 6, "VOCAB": 40, "N_POSITIONS": 8, "EMBED": 24}}


class Model(nn.Module):
    def __init__(self, vocab: int, n_positions: int, embed: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, embed)
        self.wpe = nn.Embedding(n_positions, embed)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        position_ids = torch.arange(input_ids.shape[-1], dtype=torch.long, device=input_ids.device).unsqueeze(0)
        return self.wte(input_ids) + self.wpe(position_ids)


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, N_POSITIONS, EMBED]
