"""SwiGLU activation: silu(gate) * up on the fused gate/up projection output, bf16.

Where it occurs: the MLP of every Llama 2/3, Mistral, Mixtral expert, Qwen2/3 and DeepSeek block,
in training and in inference. Serving engines compute gate and up with one matmul into a
[tokens, 2 * intermediate] tensor and apply this activation in a separate kernel (vLLM's
``SiluAndMul``, Megatron's ``bias_swiglu``); the first half is the gate, the second half is up.

Sizes that matter: Llama-3-8B's intermediate size 14336 over 2048 tokens of a prefill or training
micro-batch (production: TOKENS=2048, input [2048, 28672], output [2048, 14336], bf16). The
``decode`` set is 16 tokens. The ``odd`` set uses an intermediate size of 1375 (no power-of-two
factor) so a kernel that assumes aligned halves fails.

Character: elementwise and memory bound (1.5 elements of traffic per output element); silu needs
exp, best computed in fp32.

Bytes moved at production: read 117.4 MB, write 58.7 MB = 176.2 MB.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 2048
INTERMEDIATE = 14336
DTYPE = "bfloat16"
SHAPES = {
    "small": {"TOKENS": 5, "INTERMEDIATE": 200, "DTYPE": "float32"},
    "odd": {"TOKENS": 33, "INTERMEDIATE": 1375},
    "decode": {"TOKENS": 16},
}


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, gate_up: torch.Tensor) -> torch.Tensor:
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate) * up


def get_inputs():
    gate_up = torch.randn(TOKENS, 2 * INTERMEDIATE) * 1.5
    return [gate_up.to(getattr(torch, DTYPE))]


def get_init_inputs():
    return []
