"""Graph problems: a captured graph written as a KernelBench-format problem file.

The Dynamo backend optimises each graph it receives like any problem file, so the codegen and
the judge only ever see problem files. The file's ``Model.forward`` takes the graph's tensor
inputs (parameters included: Dynamo lifts them to inputs, so a graph problem's ``Model`` holds
only the constants the graph creates, written into it as literals) and runs the canonical ATen graph;
``get_inputs()`` draws random tensors with the example inputs' shapes, dtypes, strides and
integer ranges. Capturing the written file gives the same canonical graph back.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import torch

from egg.capture.model import CapturedGraph, CaptureError
from egg.inputs import input_spec, inputs_source, specs_json

INPUTS_FILE = "graph_inputs.json"
# Constants the graph creates are written into the file as literals up to this many elements: a
# candidate copies its problem's Model, and the judge refuses candidates that load files. Larger
# ones (rare: parameters and buffers are graph inputs under Dynamo) keep the graph as captured.
MAX_CONSTANT_ELEMENTS = 65536
# Names fx's printed code may use beyond torch itself; the file defines each of them.
_PROVIDED = {"torch", "device", "inf", "nan"}


def _literal(name: str, value: torch.Tensor) -> str:
    """``value`` as exact Python source (floats print as their shortest round-tripping repr)."""
    if value.numel() > MAX_CONSTANT_ELEMENTS or value.is_complex():
        raise CaptureError(f"the graph creates constant {name} ({list(value.shape)}, {value.dtype}), which a "
                           f"problem file holds only when real and of at most {MAX_CONSTANT_ELEMENTS} elements")
    data = value.detach().cpu()
    dtype = str(data.dtype)
    if data.dim() == 0:
        return f"torch.tensor({data.item()!r}, dtype={dtype})"
    return f"torch.tensor({data.flatten().tolist()!r}, dtype={dtype}).reshape({list(data.shape)!r})"


def _graph_function(captured: CapturedGraph) -> str:
    code = captured.gm.graph.python_code(root_module="self")
    used = {name for name in code.globals if re.search(rf"\b{re.escape(name)}\b", code.src)}
    unknown = sorted(used - _PROVIDED)
    if unknown:
        raise CaptureError(f"the graph's code needs {', '.join(unknown)}, which a problem file cannot name")
    body = code.src.strip("\n").replace("def forward(self, ", "def graph(", 1).replace("def forward(self)", "def graph()", 1)
    return textwrap.dedent(body)


def write_graph_problem(
    captured: CapturedGraph, example_inputs: list[Any], folder: Path, title: str = "a TorchDynamo graph"
) -> Path:
    """Write ``folder/problem.py`` (+ the input spec and the graph's constants) for ``captured``.

    ``example_inputs`` are the values the graph was captured with, by position.
    """
    if captured.mutations:
        raise CaptureError(f"the graph updates {', '.join(captured.mutations)} in place")
    if not all(hasattr(out, "name") for out in captured.outputs):
        raise CaptureError("the graph returns non-tensor values")
    folder.mkdir(parents=True, exist_ok=True)
    tensors = [g for g in captured.inputs if g.kind != "constant"]
    constants = {g.name: g.value for g in captured.inputs if g.kind == "constant"}
    if any(value is None for value in constants.values()):
        raise CaptureError("the graph reads a constant whose value is unknown")
    specs = [input_spec(example_inputs[int(g.target)]) for g in tensors]
    (folder / INPUTS_FILE).write_text(json.dumps(specs_json(specs)))  # for people and tools; the file has its own copy
    params = ", ".join(g.name for g in tensors)
    arguments = ", ".join(f"self.{g.name}" if g.kind == "constant" else g.name for g in captured.inputs)
    result = "graph(" + arguments + ")" + ("[0]" if len(captured.outputs) == 1 else "")
    register = "".join(f"        self.register_buffer({name!r}, {_literal(name, value)})\n" for name, value in constants.items())
    source = f'''"""Graph problem written by egg for {title}: canonical ATen, {len(captured.call_nodes())} ops."""

import torch
import torch.nn as nn
from torch import device
from typing import Any

inf = float("inf")
nan = float("nan")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
{register}
    def forward(self, {params}):
        return {result}


{_graph_function(captured)}


{inputs_source(specs)}

def get_init_inputs():
    return []
'''
    path = folder / "problem.py"
    path.write_text(source, encoding="utf-8")
    return path
