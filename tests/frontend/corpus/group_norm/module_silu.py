"""``nn.GroupNorm`` followed by SiLU, the ``norm1 -> nonlinearity`` pair that opens every diffusers
``ResnetBlock2D`` and Stable Diffusion VAE block; fp16 in the ``small`` set."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
CHANNELS = 512
HEIGHT = 32
WIDTH = 32
GROUPS = 32
DTYPE = "float16"
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 16, "HEIGHT": 3, "WIDTH": 5, "GROUPS": 8}}


class Model(nn.Module):
    def __init__(self, channels: int, groups: int, dtype: str) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(num_groups=groups, num_channels=channels, eps=1e-6, affine=True)
        with torch.no_grad():
            self.norm1.weight.copy_(1.0 + 0.1 * torch.randn(channels))
            self.norm1.bias.copy_(0.1 * torch.randn(channels))
        self.to(getattr(torch, dtype))

    def forward(self, input_tensor: torch.Tensor) -> torch.Tensor:
        hidden_states = self.norm1(input_tensor)
        return F.silu(hidden_states)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [CHANNELS, GROUPS, DTYPE]
