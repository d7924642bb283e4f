"""Position ids from a left-padded attention mask, as transformers' generation code computes them
(``prepare_inputs_for_generation``): ``position_ids = attention_mask.long().cumsum(-1) - 1;
position_ids.masked_fill_(attention_mask == 0, 1)``: an integer masked scan, exact."""

import torch
import torch.nn as nn

BATCH = 64
SEQ = 4096
SHAPES = {"small": {"BATCH": 3, "SEQ": 9}}


class Model(nn.Module):
    def forward(self, attention_mask: torch.Tensor) -> torch.Tensor:
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        return position_ids


def get_inputs():
    pad = torch.randint(0, SEQ, (BATCH, 1))
    return [(torch.arange(SEQ)[None, :] >= pad).to(torch.int32)]


def get_init_inputs():
    return []
