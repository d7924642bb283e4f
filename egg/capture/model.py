"""What a capture produces: the canonical ATen graph and the description of its inputs.

``CapturedGraph`` holds an fx graph, so it is a dataclass rather than a pydantic model; whatever
crosses a process boundary (the analysis, reports) is derived from it as pydantic data.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import fx, nn
from torch.utils._pytree import TreeSpec, tree_unflatten

InputKind = Literal["parameter", "buffer", "constant", "user_input"]
CaptureMethod = Literal["export", "dynamo"]


class CaptureError(Exception):
    """The program cannot be captured as one graph; ``str(error)`` is a one-line reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(" ".join(reason.split()))

    @property
    def reason(self) -> str:
        return str(self)


@dataclass
class GraphInput:
    """One placeholder of the canonical graph, in placeholder order.

    ``target``: for parameters, buffers and constants the fully qualified attribute name on the
    problem's ``Model`` (``"layers.0.weight"``); for user inputs the position in
    ``forward(*inputs)``. Constants that the forward creates itself (``torch.tensor([...])``) are
    named ``lifted_tensor_N`` by torch.export and carry their value; constants that are plain
    tensor attributes of the model resolve by ``target`` and carry ``value=None`` when the capture
    ran on fake tensors. In a Dynamo capture every placeholder is a positional graph input:
    ``target`` is its position and ``kind`` says whether Dynamo lifted a parameter or buffer.
    """

    name: str
    kind: InputKind
    target: str | int
    shape: tuple[int, ...]
    dtype: torch.dtype
    stride: tuple[int, ...]
    value: Any = None


@dataclass
class CapturedGraph:
    """A program as canonical ATen (see :mod:`egg.capture.opset`), with its calling convention.

    ``gm`` is called with one tensor per entry of ``inputs`` and returns the new values of the
    mutated buffers first and then the user outputs, flat; ``out_spec`` rebuilds the structure
    ``forward`` returns from the user outputs. ``mutations`` maps what the program updates in
    place (a buffer's FQN, or the ``GraphInput.name`` of a mutated user input) to the name of the
    output node holding its new value.
    """

    gm: fx.GraphModule
    inputs: list[GraphInput]
    outputs: list[fx.Node]
    out_spec: TreeSpec
    mutations: dict[str, str]
    method: CaptureMethod
    notes: list[str] = field(default_factory=list)
    source_graphs: int = 1
    # Forward arguments that are not tensors, baked into the graph: (name, position, value).
    scalar_inputs: list[tuple[str, int | str, Any]] = field(default_factory=list)

    def call_nodes(self) -> list[fx.Node]:
        """The graph's op nodes (``call_function``) in execution order."""
        return [n for n in self.gm.graph.nodes if n.op == "call_function"]

    def op_counts(self) -> Counter[str]:
        """How often each op (``"aten.add.Tensor"``) occurs."""
        return Counter(op_name(n.target) for n in self.call_nodes())

    def input_named(self, name: str) -> GraphInput:
        for graph_input in self.inputs:
            if graph_input.name == name:
                return graph_input
        raise KeyError(name)

    def run(self, model: nn.Module | None, inputs: Sequence[Any]) -> Any:
        """Execute the canonical graph as ``model(*inputs)`` would run, mutations included.

        Parameters, buffers and constants are read from ``model`` by ``target`` (lifted
        constants from ``value``); buffer and input mutations are written back, as eager would.
        """
        values = [_input_value(g, model, inputs) for g in self.inputs]
        results = self.gm(*values)
        output = next(n for n in reversed(self.gm.graph.nodes) if n.op == "output")
        by_name = {a.name: r for a, r in zip(output.args[0], results) if isinstance(a, fx.Node)}
        with torch.no_grad():
            for target, name in self.mutations.items():
                graph_input = next((g for g in self.inputs if g.name == target), None)
                if graph_input is not None:
                    _input_value(graph_input, model, inputs).copy_(by_name[name])
                elif model is not None:
                    model.get_buffer(target).copy_(by_name[name])
        user = [by_name[n.name] if isinstance(n, fx.Node) else n for n in self.outputs]
        return tree_unflatten(user, self.out_spec)


_PATH_STEP = re.compile(r"\[(\d+|'[^']*')\]")


def _input_value(graph_input: GraphInput, model: nn.Module | None, inputs: Sequence[Any]) -> Any:
    target = graph_input.target
    if graph_input.kind == "user_input" or isinstance(target, int):
        if isinstance(target, int):
            return inputs[target]
        position, _, path = target.partition("[")
        value = inputs[int(position)]
        for step in _PATH_STEP.findall("[" + path):
            value = value[int(step)] if step.isdigit() else value[step.strip("'")]
        return value
    if graph_input.value is not None or model is None:
        return graph_input.value
    owner, _, attr = target.rpartition(".")
    return getattr(model.get_submodule(owner) if owner else model, attr)


def op_name(target: Any) -> str:
    """``aten.add.Tensor`` for an OpOverload; ``getitem`` and friends by their own name."""
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(target)
    return getattr(target, "__name__", repr(target))
