"""Capture: a PyTorch program as one canonical ATen graph (see the front-end contract).

``capture_problem(path)`` exports a KernelBench-format problem's ``Model``; ``capture_graph(gm,
example_inputs)`` takes a graph a TorchDynamo backend received. Both decompose with PyTorch's
own tables to the op set of :mod:`egg.capture.opset` and apply only exact rewrites
(:mod:`egg.capture.normalize`).
"""

import warnings

# torch 2.13's pytree warns from inside its own deepcopy of an exported program's tree specs (once
# per copied spec: dozens of lines per capture on stderr); nothing a caller can act on.
warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning)

from egg.capture.dynamo import capture_graph  # noqa: E402
from egg.capture.model import CapturedGraph, CaptureError, GraphInput, op_name  # noqa: E402
from egg.capture.problem import capture_module, capture_problem  # noqa: E402

__all__ = [
    "CaptureError", "CapturedGraph", "GraphInput", "capture_graph", "capture_module", "capture_problem",
    "op_name",
]
