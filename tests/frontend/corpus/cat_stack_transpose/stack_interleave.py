"""``torch.stack`` of pointwise results re-interleaved with ``flatten``: NeRF-style Fourier features,
``torch.stack([torch.sin(x * f), torch.cos(x * f)], dim=-1).flatten(-2)`` with a frequency buffer."""

import torch
import torch.nn as nn

POINTS = 65536
FREQS = 64
SHAPES = {"small": {"POINTS": 6, "FREQS": 8}}


class Model(nn.Module):
    def __init__(self, n_freqs: int) -> None:
        super().__init__()
        self.register_buffer("freq_bands", 2.0 ** torch.linspace(0, 6, n_freqs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x[..., None] * self.freq_bands
        return torch.stack([torch.sin(xf), torch.cos(xf)], dim=-1).flatten(-2)


def get_inputs():
    return [torch.rand(POINTS, 3) * 2.0 - 1.0]


def get_init_inputs():
    return [FREQS]
