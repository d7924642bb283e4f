"""Graph problems: a Dynamo graph written as a problem file captures back to the same graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import fx, nn

from capture_helpers import assert_computes_like_eager
from egg.capture import CaptureError, capture_graph, capture_problem
from egg.capture.write import write_graph_problem
from egg.inputs import make_inputs
from egg.problem import inspect_problem


def dynamo_graphs(module: nn.Module, *args: Any) -> list[tuple[fx.GraphModule, list[Any]]]:
    """The graphs (and example inputs) TorchDynamo hands a backend for ``module(*args)``."""
    graphs: list[tuple[fx.GraphModule, list[Any]]] = []

    def backend(gm: fx.GraphModule, example_inputs: list[Any]) -> Any:
        graphs.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(module, backend=backend)(*args)
    return graphs


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.nn.functional.gelu(self.proj(x.transpose(0, 1)))
        scale = torch.tensor([0.5, 2.0]).repeat(8)  # a constant the graph creates
        return h * scale, ids.max(dim=-1).values


def test_written_graph_problem_captures_back_to_the_same_graph(tmp_path: Path) -> None:
    x, ids = torch.randn(16, 3), torch.randint(3, 9, (3, 4))
    (gm, examples), = dynamo_graphs(Block(), x.t().contiguous().t(), ids)
    captured = capture_graph(gm, examples)
    assert captured.method == "dynamo"
    kinds = {g.kind for g in captured.inputs}
    assert {"parameter", "user_input", "constant"} <= kinds
    path = write_graph_problem(captured, examples, tmp_path / "graph")
    inspect_problem(path)  # a valid problem file
    again = capture_problem(path)
    assert again.op_counts() == captured.op_counts()
    assert [(g.shape, g.dtype, g.stride) for g in again.inputs] == [(g.shape, g.dtype, g.stride) for g in captured.inputs]
    assert_computes_like_eager(path, "default")


def test_inputs_keep_strides_dtypes_and_integer_ranges(tmp_path: Path) -> None:
    x, ids = torch.randn(3, 16).t(), torch.randint(3, 9, (3, 4))  # x is a transposed view
    (gm, examples), = dynamo_graphs(Block(), x, ids)
    path = write_graph_problem(capture_graph(gm, examples), examples, tmp_path / "graph")
    specs = json.loads((path.parent / "graph_inputs.json").read_text())
    drawn = make_inputs([{**e, "dtype": getattr(torch, e["dtype"].removeprefix("torch."))} for e in specs])
    tensors = [e for e in examples if isinstance(e, torch.Tensor) and not isinstance(e, nn.Parameter)]
    by_shape = {tuple(t.shape): t for t in drawn}
    assert by_shape[(16, 3)].stride() == (1, 16)
    assert by_shape[(3, 4)].dtype == torch.int64
    assert 3 <= int(by_shape[(3, 4)].min()) and int(by_shape[(3, 4)].max()) <= 8
    assert len(drawn) == len(tensors) + 2  # and the linear's weight and bias, which are inputs here


def test_a_graph_that_updates_its_inputs_is_not_written(tmp_path: Path) -> None:
    model = nn.BatchNorm1d(4)  # training mode: the running statistics are updated in place
    (gm, examples), = dynamo_graphs(model, torch.randn(8, 4))
    captured = capture_graph(gm, examples)
    assert captured.mutations
    with pytest.raises(CaptureError, match="in place"):
        write_graph_problem(captured, examples, tmp_path / "graph")
