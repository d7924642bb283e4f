"""Capture: a PyTorch program as one canonical ATen graph (see the front-end contract).

``capture_problem(path)`` exports a KernelBench-format problem's ``Model``; ``capture_graph(gm,
example_inputs)`` takes a graph a TorchDynamo backend received. Both decompose with PyTorch's
own tables to the op set of :mod:`egg.capture.opset` and apply only exact rewrites
(:mod:`egg.capture.normalize`).
"""

from egg.capture.dynamo import capture_graph
from egg.capture.model import CapturedGraph, CaptureError, GraphInput, op_name
from egg.capture.problem import capture_module, capture_problem

__all__ = [
    "CaptureError", "CapturedGraph", "GraphInput", "capture_graph", "capture_module", "capture_problem",
    "op_name",
]
