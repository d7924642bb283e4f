"""Gemma's scaled token embedding (transformers ``GemmaModel.forward``): ``inputs_embeds =
self.embed_tokens(input_ids)``, ``normalizer = torch.tensor(hidden_size ** 0.5,
dtype=hidden_states.dtype)``, ``hidden_states * normalizer`` (the normaliser rounded to the
activations' dtype, as the model does)."""

import torch
import torch.nn as nn

BATCH = 4
SEQ = 2048
VOCAB = 256000
HIDDEN = 3072
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 5, "VOCAB": 50, "HIDDEN": 32, "DTYPE": "float16"}}


class Model(nn.Module):
    def __init__(self, vocab: int, hidden: int, dtype: str) -> None:
        super().__init__()
        self.hidden_size = hidden
        self.embed_tokens = nn.Embedding(vocab, hidden, dtype=getattr(torch, dtype))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden_states = self.embed_tokens(input_ids)
        normalizer = torch.tensor(self.hidden_size**0.5, dtype=hidden_states.dtype)
        return hidden_states * normalizer


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, HIDDEN, DTYPE]
