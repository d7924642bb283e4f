"""Weight-only int4 in GPTQ's layout (AutoGPTQ / exllama reference dequantisation): eight 4-bit
values per int32 word along the input dimension, ``qweight`` stored [in / 8, out], unpacked with a
shift vector ``torch.arange(0, 32, 4)`` broadcast against the words, ``& 15``, re-centred by -8,
one scale per output channel, ``x @ w`` (the weight already [in, out])."""

import torch
import torch.nn as nn

TOKENS = 16
IN_FEATURES = 4096
OUT_FEATURES = 11008
DTYPE = "float16"
SHAPES = {"small": {"TOKENS": 4, "IN_FEATURES": 64, "OUT_FEATURES": 24, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, dtype: str) -> None:
        super().__init__()
        self.register_buffer("qweight", torch.randint(-2**31, 2**31 - 1, (in_features // 8, out_features),
                                                      dtype=torch.int32))
        self.register_buffer("scales", (torch.rand(out_features) * 0.1 + 0.02).to(getattr(torch, dtype)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifts = torch.arange(0, 32, 4, device=x.device, dtype=torch.int32)
        w = (self.qweight.unsqueeze(1) >> shifts.view(1, 8, 1)) & 15
        w = w.reshape(-1, self.qweight.shape[1]) - 8
        return x @ (w.to(x.dtype) * self.scales)


def get_inputs():
    return [torch.randn(TOKENS, IN_FEATURES).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, DTYPE]
