"""Cross-entropy loss over a 128256-token vocabulary: bf16 logits [tokens, vocab] -> fp32 mean loss.

Where it occurs: the LM-head loss of every causal language model in pre-training and fine-tuning
(Llama-3's vocabulary is 128256; Qwen2's 151936, Gemma's 256000). Hugging Face upcasts the bf16
logits to fp32 and calls ``F.cross_entropy`` with ``ignore_index=-100`` (padding and masked
prompt tokens); the loss is the mean over the tokens that are not ignored. About 10% of the
targets here are -100.

Sizes that matter: vocab 128256 (Llama-3) and 1024 tokens per chunk (production; losses are often
computed in chunks of tokens to bound the fp32 logits memory, as in Liger/torchtune chunked CE).
The ``odd`` set uses GPT-2's vocabulary of 50257.

Character: memory bound; one pass over the logits computing a row max, a log-sum-exp and the
target logit (an online-softmax kernel reads every logit exactly once, in bf16, instead of
materialising the fp32 copy and the log-probabilities as the reference does), then a mean over
~1000 rows. The default fp32 tolerance (1e-4) applies to the loss: the reduction is done in fp32
from exact bf16 inputs, so a correct kernel lands within a few ulps of the reference.

Bytes moved at production: read 262.7 MB of bf16 logits and 8 KiB of targets, write 4 bytes
= 262.7 MB.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 1024
VOCAB = 128256
IGNORE_FRACTION = 0.1
DTYPE = "bfloat16"
SHAPES = {
    "small": {"TOKENS": 6, "VOCAB": 500, "DTYPE": "float32"},
    "odd": {"TOKENS": 13, "VOCAB": 50257},
}


class Model(nn.Module):
    def __init__(self, ignore_index: int = -100) -> None:
        super().__init__()
        self.ignore_index = ignore_index

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), targets, ignore_index=self.ignore_index)


def get_inputs():
    logits = torch.randn(TOKENS, VOCAB) * 2.0
    targets = torch.randint(0, VOCAB, (TOKENS,))
    ignored = torch.rand(TOKENS) < IGNORE_FRACTION
    ignored[0] = False  # at least one counted token, so the mean is defined
    targets = targets.masked_fill(ignored, -100)
    return [logits.to(getattr(torch, DTYPE)), targets]


def get_init_inputs():
    return [-100]
