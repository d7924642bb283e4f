"""BERT's embeddings (transformers ``BertEmbeddings.forward``, absolute positions, dropout off):
``word_embeddings(input_ids) + token_type_embeddings(token_type_ids) + position_embeddings(
position_ids)`` with ``position_ids`` sliced from a registered ``arange`` buffer, then
``LayerNorm`` (eps 1e-12): three gathers, two adds and a row norm."""

import torch
import torch.nn as nn

BATCH = 32
SEQ = 512
VOCAB = 30522
MAX_POSITIONS = 512
TYPE_VOCAB = 2
HIDDEN = 768
SHAPES = {"small": {"BATCH": 2, "SEQ": 5, "VOCAB": 40, "MAX_POSITIONS": 8, "HIDDEN": 32}}


class Model(nn.Module):
    def __init__(self, vocab: int, max_positions: int, type_vocab: int, hidden: int) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_positions).expand((1, -1)), persistent=False)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        seq_length = input_ids.shape[1]
        position_ids = self.position_ids[:, :seq_length]
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ)), torch.randint(0, TYPE_VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, MAX_POSITIONS, TYPE_VOCAB, HIDDEN]
