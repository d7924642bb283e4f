"""``capture_graph``: the graph a TorchDynamo backend received, as canonical ATen.

Dynamo hands a backend an fx graph of torch-level calls whose placeholders are everything the
frame reads (with ``inline_inbuilt_nn_modules``, parameters and buffers too) and the example
values of the first call. Exporting that graph module with those examples runs the same pipeline
as ``capture_problem``: decomposition, exact rewrites, specialisation to the examples' shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import fx, nn

from egg.capture.export import CAPTURE_LOCK, canonical_graph, export_program
from egg.capture.model import CapturedGraph, InputKind


def _kind(node: fx.Node, example: Any) -> InputKind:
    """What Dynamo lifted into this placeholder: its source says parameter or buffer."""
    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    name = getattr(source, "name", "")
    name = name() if callable(name) else str(name)  # a method in older torch, a property in 2.13
    if isinstance(example, nn.Parameter) or "_parameters" in name:
        return "parameter"
    if "_buffers" in name:
        return "buffer"
    return "user_input"


def capture_graph(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> CapturedGraph:
    """Capture a Dynamo graph; every placeholder becomes a positional input (``target`` = index).

    Raises ``CaptureError`` with a one-line reason when the graph cannot be exported.
    """
    args = list(example_inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    kinds = [_kind(node, value) for node, value in zip(placeholders, args)]
    with CAPTURE_LOCK:
        program = export_program(gm, args, "the Dynamo graph")
        return canonical_graph(program, args, method="dynamo", notes=[], input_kinds=kinds)
