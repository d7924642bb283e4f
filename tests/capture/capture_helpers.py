"""Checks shared by the capture tests: a captured graph is canonical, and computes what eager does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from egg.capture import CapturedGraph, capture_problem
from egg.capture.opset import CANONICAL_OPS
from egg.capture.problem import build_problem
from egg.problem import inspect_problem, load_problem_module

REPO = Path(__file__).resolve().parents[2]
WORKLOADS = sorted(p for p in (REPO / "workloads").glob("*.py") if not p.name.startswith("_"))
FIXTURE_PROBLEMS = sorted((REPO / "tests" / "fixtures" / "problems").glob("*.py"))


def assert_canonical(captured: CapturedGraph) -> None:
    """Only canonical ops, and every node carries a value with shape, dtype and strides."""
    outside = {name for name in captured.op_counts() if name not in CANONICAL_OPS}
    assert not outside, f"ops outside CANONICAL_OPS: {sorted(outside)}"
    for node in captured.gm.graph.nodes:
        if node.op in ("placeholder", "call_function"):
            value = node.meta.get("val")
            assert value is not None, node.name
            for leaf in tree_flatten(value)[0]:
                if isinstance(leaf, torch.Tensor):
                    assert len(leaf.stride()) == leaf.dim(), node.name


def real_problem(path: Path, shape_set: str) -> tuple[torch.nn.Module, list[Any]]:
    """The problem's Model and inputs, real tensors, seeded as the judge seeds them."""
    info = inspect_problem(path)
    return build_problem(load_problem_module(info.path, info.shape_sets[shape_set]), "cpu", None)


def assert_computes_like_eager(path: Path, shape_set: str, *, exact: bool = False) -> CapturedGraph:
    """The canonical graph, run on real tensors, gives the eager outputs and buffer updates."""
    captured = capture_problem(path, shape_set)
    eager_model, eager_inputs = real_problem(path, shape_set)
    model, inputs = real_problem(path, shape_set)
    with torch.no_grad():
        expected = eager_model(*eager_inputs)
        got = captured.run(model, inputs)
    assert tree_flatten(got)[1] == tree_flatten(expected)[1]  # same structure (tuple, dict, ...)
    for want, have in zip(tree_flatten(expected)[0], tree_flatten(got)[0]):
        if not isinstance(want, torch.Tensor):
            assert want == have
            continue
        assert have.dtype == want.dtype and have.shape == want.shape
        if exact:
            assert torch.equal(have, want)
        else:
            torch.testing.assert_close(have, want, atol=1e-5, rtol=1e-4)
    for (name, want), (_, have) in zip(eager_model.named_buffers(), model.named_buffers()):
        torch.testing.assert_close(have, want, atol=1e-6, rtol=1e-5, msg=f"buffer {name}")
    return captured
