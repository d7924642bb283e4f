"""Sampling logits processing: per-request temperature, top-k masking to -inf, softmax over vocab.

Where it occurs: the sampler of every LLM serving engine (vLLM, SGLang, TensorRT-LLM, Hugging
Face ``generate`` with ``TopKLogitsWarper``) at every decode step of Llama, Mistral, Qwen or GPT models, on the last-position logits of
each sequence in the batch, just before drawing the next token. The reference upcasts the bf16
LM-head logits to fp32, divides each row by its request's temperature, keeps the logits that are
>= the k-th largest (ties at the threshold are all kept, as in Hugging Face), sets the others to
-inf, and returns the fp32 probabilities (the masked entries are exactly 0).

Sizes that matter: a serving batch of 256 sequences over Llama-3's 128256-token vocabulary with
top_k 50 (production). The ``odd`` set uses GPT-2's vocabulary (50257) and top_k 40.

Character: memory bound, but the top-k selection over a 128256-wide row is the hard part: a
full sort or ``torch.topk`` is far slower than a threshold search (radix select or a few
histogram passes) fused with the max/sum of the softmax.

Bytes moved at production: read 65.7 MB of bf16 logits and 1 KiB of temperatures; write 131.3 MB
of fp32 probabilities = 197.0 MB.
"""

import torch
import torch.nn as nn

BATCH = 256
VOCAB = 128256
TOP_K = 50
DTYPE = "bfloat16"
SHAPES = {
    "small": {"BATCH": 3, "VOCAB": 1000, "TOP_K": 10, "DTYPE": "float32"},
    "odd": {"BATCH": 5, "VOCAB": 50257, "TOP_K": 40},
}


class Model(nn.Module):
    def __init__(self, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k

    def forward(self, logits: torch.Tensor, temperatures: torch.Tensor) -> torch.Tensor:
        logits = logits.float() / temperatures.unsqueeze(1)
        kth_largest = torch.topk(logits, self.top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth_largest, float("-inf"))
        return torch.softmax(logits, dim=-1)


def get_inputs():
    logits = torch.randn(BATCH, VOCAB) * 2.0
    temperatures = torch.rand(BATCH) + 0.5
    return [logits.to(getattr(torch, DTYPE)), temperatures]


def get_init_inputs():
    return [TOP_K]
