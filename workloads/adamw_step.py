"""One AdamW optimizer step, functional: (param, grad, exp_avg, exp_avg_sq, step) -> new state, fp32.

Where it occurs: the optimizer update at the end of every training step of essentially every LLM
(Llama, Mistral, GPT, ...; betas (0.9, 0.95), weight decay 0.1 are the usual pre-training
settings). Mixed-precision training keeps fp32 master weights and fp32 moments, so the update
reads four fp32 tensors and writes three. The math is exactly ``torch.optim.AdamW``'s
(single-tensor path): decoupled weight decay ``p *= 1 - lr * wd``, moment updates, bias
corrections for the step count, ``p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)``.

Functional form: ``step`` is a 0-d fp32 tensor holding this update's step number (already
incremented, as ``torch.optim`` does before using it); the forward returns new tensors and must
not update its inputs in place (the harness checks). Bias corrections are computed in fp64 (as
``torch.optim`` does with Python floats) so no precision is lost at step 1.

Sizes that matter: a 4096 x 2048 fp32 parameter (8.4 M elements; a shard of a flattened
parameter buffer in ZeRO/FSDP) at step 1000 (production). Real optimizers launch this for every
parameter tensor, so a fused multi-tensor kernel is what production uses.

Character: purely memory bound elementwise (7 x 4 bytes per element, a sqrt and a divide).
TOLERANCE: grads are ~1e-2, so exp_avg_sq is ~1e-4 and the update ~1e-3; the default fp32
atol of 1e-4 would accept an all-zero exp_avg_sq, so atol is 1e-7 with rtol 1e-5 (fp32
reassociation stays within ~1e-7 relative).

Bytes moved at production: read 4 x 33.6 MB, write 3 x 33.6 MB = 234.9 MB.
"""

import torch
import torch.nn as nn

ROWS = 4096
COLS = 2048
STEP = 1000
LR = 1e-3
BETA1 = 0.9
BETA2 = 0.95
EPS = 1e-8
WEIGHT_DECAY = 0.1
DTYPE = "float32"
# exp_avg_sq is ~1e-4 and the update ~1e-3: the default atol (1e-4) would not see them.
TOLERANCE = {"float32": {"atol": 1e-7, "rtol": 1e-5}}
SHAPES = {
    "small": {"ROWS": 5, "COLS": 300, "STEP": 3},
    "odd": {"ROWS": 37, "COLS": 1001, "STEP": 1},
}


class Model(nn.Module):
    def __init__(self, lr: float, beta1: float, beta2: float, eps: float, weight_decay: float) -> None:
        super().__init__()
        self.lr = lr
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.weight_decay = weight_decay

    def forward(self, param, grad, exp_avg, exp_avg_sq, step):
        step = step.double()
        param = param * (1 - self.lr * self.weight_decay)
        exp_avg = exp_avg.lerp(grad, 1 - self.beta1)
        exp_avg_sq = exp_avg_sq * self.beta2 + (1 - self.beta2) * grad * grad
        bias_correction1 = 1 - self.beta1**step
        bias_correction2 = 1 - self.beta2**step
        step_size = self.lr / bias_correction1
        denom = exp_avg_sq.sqrt() / bias_correction2.sqrt() + self.eps
        param = param - step_size * exp_avg / denom
        return param, exp_avg, exp_avg_sq


def get_inputs():
    dtype = getattr(torch, DTYPE)
    param = torch.randn(ROWS, COLS) * 0.02
    grad = torch.randn(ROWS, COLS) * 1e-2
    # Moments as a run would have them: exp_avg ~ a smoothed gradient, exp_avg_sq ~ grad^2.
    exp_avg = torch.randn(ROWS, COLS) * 3e-3
    exp_avg_sq = (torch.randn(ROWS, COLS) * 1e-2) ** 2 + 1e-5 * torch.rand(ROWS, COLS)
    step = torch.tensor(float(STEP), dtype=torch.float32)
    return [param.to(dtype), grad.to(dtype), exp_avg.to(dtype), exp_avg_sq.to(dtype), step]


def get_init_inputs():
    return [LR, BETA1, BETA2, EPS, WEIGHT_DECAY]
