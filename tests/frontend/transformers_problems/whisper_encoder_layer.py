"""transformers' ``WhisperEncoderLayer``: pre-LN self-attention (q/v projections with bias, k
without; SDPA, no mask), residual, pre-LN MLP (``fc1``, exact GELU, ``fc2``), residual, and in fp16
the clamp to ``finfo(float16).max - 1000`` Whisper applies against overflow. Built from a config
with random weights; nothing is downloaded. Default sizes: whisper-base's encoder (512 wide, 8
heads, 2048 inner) over 8 x 1500 audio frames (30 s)."""

import torch
import torch.nn as nn
from transformers import WhisperConfig
from transformers.models.whisper.modeling_whisper import WhisperEncoderLayer

BATCH = 8
FRAMES = 1500
HIDDEN = 512
HEADS = 8
INNER = 2048
DTYPE = "float16"
SHAPES = {
    "small": {"BATCH": 2, "FRAMES": 8, "HIDDEN": 64, "HEADS": 4, "INNER": 128, "DTYPE": "float32"},
    "small_fp16": {"BATCH": 2, "FRAMES": 8, "HIDDEN": 64, "HEADS": 4, "INNER": 128, "DTYPE": "float16"},
}


class Model(nn.Module):
    def __init__(self, hidden: int, heads: int, inner: int, dtype: str):
        super().__init__()
        config = WhisperConfig(d_model=hidden, encoder_attention_heads=heads, encoder_ffn_dim=inner,
                               encoder_layers=1, attn_implementation="sdpa")
        self.layer = WhisperEncoderLayer(config).to(getattr(torch, dtype))
        with torch.no_grad():  # fresh LayerNorm gains are exactly 1 and biases 0; trained ones are not
            for p in self.layer.parameters():
                if p.dim() == 1:
                    p.add_(0.1 * torch.randn_like(p))
        self.eval()  # dropout is random in training mode: no candidate could reproduce it

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.layer(hidden_states, None)


def get_inputs():
    return [torch.randn(BATCH, FRAMES, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, HEADS, INNER, DTYPE]
