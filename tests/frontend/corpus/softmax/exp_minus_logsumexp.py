"""Softmax as ``torch.exp(x - torch.logsumexp(x, dim=-1, keepdim=True))``, the form probabilistic
code uses when it already works in log space (e.g. mixture weights, MoE router probabilities)."""

import torch
import torch.nn as nn

TOKENS = 8192
EXPERTS = 64
SHAPES = {"small": {"TOKENS": 8, "EXPERTS": 16}}


class Model(nn.Module):
    def forward(self, router_logits: torch.Tensor) -> torch.Tensor:
        return torch.exp(router_logits - torch.logsumexp(router_logits, dim=-1, keepdim=True))


def get_inputs():
    return [torch.randn(TOKENS, EXPERTS) * 3.0]


def get_init_inputs():
    return []
