"""The causal-LM loss as transformers wrote it through v4.4x (``LlamaForCausalLM.forward``): shift
``logits[..., :-1, :].contiguous()`` and ``labels[..., 1:].contiguous()``, flatten, ``logits.float()``,
``CrossEntropyLoss()`` with the default ``ignore_index=-100`` (padding and prompt tokens carry -100;
the mean is over the tokens that count)."""

import torch
import torch.nn as nn

BATCH = 4
SEQ = 2048
VOCAB = 32000
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 5, "VOCAB": 96, "DTYPE": "float16"}}


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.loss_fct = nn.CrossEntropyLoss()

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = logits.float()
        shift_logits = logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        shift_logits = shift_logits.view(-1, shift_logits.shape[-1])
        shift_labels = shift_labels.view(-1)
        return self.loss_fct(shift_logits, shift_labels)


def get_inputs():
    logits = (torch.randn(BATCH, SEQ, VOCAB) * 3.0).to(getattr(torch, DTYPE))
    labels = torch.randint(0, VOCAB, (BATCH, SEQ))
    # prompt tokens are ignored; position 1 always counts, so the mean never divides by zero
    labels[:, 2:] = labels[:, 2:].masked_fill(torch.rand(BATCH, SEQ - 2) < 0.3, -100)
    labels[:, 0] = -100
    return [logits, labels]


def get_init_inputs():
    return []
