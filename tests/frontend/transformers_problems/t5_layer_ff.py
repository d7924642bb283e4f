"""transformers' ``T5LayerFF`` as T5 v1.1 / Flan-T5 configure it: ``T5LayerNorm`` (an RMS norm with
no mean subtraction and no bias, its variance in fp32 and the result cast to the weight's dtype),
``T5DenseGatedActDense`` (``wo(gelu_new(wi_0(x)) * wi_1(x))``, no biases), residual. Built from a
config with random weights; nothing is downloaded. Default sizes: Flan-T5-base (768 wide, 2048
inner), 16 x 512 tokens."""

import torch
import torch.nn as nn
from transformers import T5Config
from transformers.models.t5.modeling_t5 import T5LayerFF

BATCH = 16
SEQ = 512
HIDDEN = 768
INNER = 2048
DTYPE = "float16"
SHAPES = {
    "small": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "INNER": 128, "DTYPE": "float32"},
    "small_fp16": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "INNER": 128, "DTYPE": "float16"},
}


class Model(nn.Module):
    def __init__(self, hidden: int, inner: int, dtype: str):
        super().__init__()
        config = T5Config(d_model=hidden, d_ff=inner, num_heads=4, d_kv=hidden // 4, num_layers=1,
                          feed_forward_proj="gated-gelu")
        self.ff = T5LayerFF(config).to(getattr(torch, dtype))
        with torch.no_grad():  # a fresh norm's gain is exactly 1; a trained one is not
            self.ff.layer_norm.weight.add_(0.1 * torch.randn_like(self.ff.layer_norm.weight))
        self.eval()  # dropout is random in training mode: no candidate could reproduce it

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.ff(hidden_states)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, INNER, DTYPE]
