"""Sinusoidal timestep embedding as diffusers writes it (``get_timestep_embedding``): ``exponent =
-math.log(max_period) * torch.arange(0, half) / half``, ``emb = timesteps[:, None].float() *
exponent.exp()[None, :] * scale``, ``torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)``."""

import math

import torch
import torch.nn as nn

BATCH = 256
EMBED_DIM = 320
MAX_PERIOD = 10000
SHAPES = {"small": {"BATCH": 5, "EMBED_DIM": 32}}


class Model(nn.Module):
    def __init__(self, embedding_dim: int, max_period: int) -> None:
        super().__init__()
        self.embedding_dim, self.max_period = embedding_dim, max_period

    def forward(self, timesteps: torch.Tensor) -> torch.Tensor:
        half_dim = self.embedding_dim // 2
        exponent = -math.log(self.max_period) * torch.arange(
            start=0, end=half_dim, dtype=torch.float32, device=timesteps.device
        )
        exponent = exponent / half_dim
        emb = torch.exp(exponent)
        emb = timesteps[:, None].float() * emb[None, :]
        return torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)


def get_inputs():
    return [torch.randint(0, 1000, (BATCH,))]


def get_init_inputs():
    return [EMBED_DIM, MAX_PERIOD]
