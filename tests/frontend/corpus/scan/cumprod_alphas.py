"""``torch.cumprod(1.0 - betas, dim=-1)``: the cumulative product of a diffusion noise schedule
(diffusers' ``alphas_cumprod``), batched over schedules; values near 1 keep the product in range."""

import torch
import torch.nn as nn

SCHEDULES = 1024
STEPS = 1000
SHAPES = {"small": {"SCHEDULES": 4, "STEPS": 50}}


class Model(nn.Module):
    def forward(self, betas: torch.Tensor) -> torch.Tensor:
        alphas = 1.0 - betas
        return torch.cumprod(alphas, dim=-1)


def get_inputs():
    return [torch.rand(SCHEDULES, STEPS) * 0.02]


def get_init_inputs():
    return []
