"""The router z-loss of ST-MoE / Switch (transformers' ``router_z_loss_func``): ``log_z =
torch.logsumexp(router_logits, dim=-1); z_loss = log_z ** 2; torch.sum(z_loss) / (num_groups *
tokens_per_group)``, a scalar."""

import torch
import torch.nn as nn

GROUPS = 16
TOKENS = 1024
EXPERTS = 64
SHAPES = {"small": {"GROUPS": 2, "TOKENS": 5, "EXPERTS": 8}}


class Model(nn.Module):
    def forward(self, router_logits: torch.Tensor) -> torch.Tensor:
        num_groups, tokens_per_group, _ = router_logits.shape
        log_z = torch.logsumexp(router_logits, dim=-1)
        z_loss = log_z**2
        return torch.sum(z_loss) / (num_groups * tokens_per_group)


def get_inputs():
    return [torch.randn(GROUPS, TOKENS, EXPERTS) * 2.0]


def get_init_inputs():
    return []
