import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.log_softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(4, 50000, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
