"""Gemma 2's final-logit soft-capping (transformers ``Gemma2ForCausalLM.forward``): ``logits =
logits / cap; logits = torch.tanh(logits); logits = logits * cap`` with ``cap = 30.0``."""

import torch
import torch.nn as nn

TOKENS = 1024
VOCAB = 256000
SHAPES = {"small": {"TOKENS": 4, "VOCAB": 100}}


class Model(nn.Module):
    def __init__(self, final_logit_softcapping: float) -> None:
        super().__init__()
        self.final_logit_softcapping = final_logit_softcapping

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits / self.final_logit_softcapping
        logits = torch.tanh(logits)
        return logits * self.final_logit_softcapping


def get_inputs():
    return [torch.randn(TOKENS, VOCAB) * 20.0]


def get_init_inputs():
    return [30.0]
