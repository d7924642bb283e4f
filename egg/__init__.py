"""EGG: expert-guided, stage-aware agents that turn PyTorch modules into faster, verified kernels."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
