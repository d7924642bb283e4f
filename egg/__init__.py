"""EGG: expert-guided, stage-aware agents that turn PyTorch modules into faster, verified kernels."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["OptimizeResult", "__version__", "load_result", "optimize"]


def __getattr__(name: str) -> Any:
    # Lazy: `import egg` stays light (the CLI's --help, the worker process) until optimize is used.
    if name in ("optimize", "load_result", "OptimizeResult", "OptimizedModule"):
        from egg import api

        return getattr(api, name)
    raise AttributeError(name)
