"""EGG: expert-guided, stage-aware agents that turn PyTorch modules into faster, verified kernels."""

from __future__ import annotations

import sys
from typing import Any

__version__ = "0.1.0"

__all__ = ["OptimizeResult", "__version__", "load_result", "optimize"]


def __getattr__(name: str) -> Any:
    # Lazy: `import egg` stays light (the CLI's --help, the worker process) until optimize is used.
    if name in ("optimize", "load_result", "OptimizeResult"):
        from egg import api

        return getattr(api, name)
    raise AttributeError(name)


def _dynamo_backend(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
    """``torch.compile(model, backend="egg")``; imports the backend on first use (egg.backend)."""
    from egg.backend import egg_dynamo_backend

    return egg_dynamo_backend(gm, example_inputs, **kwargs)


def register_dynamo_backend() -> None:
    """Register ``"egg"`` with TorchDynamo, unless the package's entry point already provides it."""
    from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS, register_backend

    if "egg" not in _COMPILER_FNS and _BACKENDS.get("egg") is None:
        register_backend(compiler_fn=_dynamo_backend, name="egg")


# Registering needs TorchDynamo; importing it here would make `import egg` heavy, so register only
# when it is loaded already. Otherwise the entry point (torch_dynamo_backends) or an import of
# egg.backend does it.
if "torch._dynamo.backends.registry" in sys.modules:
    register_dynamo_backend()
