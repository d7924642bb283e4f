"""Per-token cross-entropy with label smoothing, ``F.cross_entropy(logits, target,
label_smoothing=0.1, reduction="none")`` (timm's ``LabelSmoothingCrossEntropy`` computes the same;
``reduction="none"`` is how per-token losses are kept for masking or weighting)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 8192
CLASSES = 32000
SHAPES = {"small": {"TOKENS": 6, "CLASSES": 120}}


class Model(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, target, label_smoothing=0.1, reduction="none")


def get_inputs():
    return [torch.randn(TOKENS, CLASSES) * 3.0, torch.randint(0, CLASSES, (TOKENS,))]


def get_init_inputs():
    return []
