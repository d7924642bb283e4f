"""``capture_problem``: a KernelBench-format problem file as one canonical graph.

The problem is built the way the judge builds it (seed, ``get_init_inputs()``, seed,
``Model(...)``, seed, ``get_inputs()``, in training mode as KernelBench leaves it) under a
``FakeTensorMode``: shapes, dtypes and strides without memory or compute, so a 16384 x 16384
weight costs nothing. Real tensors are used only when the fake build fails (``__init__`` that
reads values, for instance); either way the forward itself is only ever traced.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import structlog
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

from egg.capture.export import canonical_graph, export_program, fake_attributes_to_buffers, first_line
from egg.capture.model import CapturedGraph, CaptureError
from egg.problem import DEFAULT_SHAPE_SET, inspect_problem, load_problem_module, select_shape_sets

log = structlog.get_logger(__name__)


def build_problem(
    problem: ModuleType, device: str, mode: FakeTensorMode | None, seed: int = 0
) -> tuple[nn.Module, list[Any]]:
    """``Model`` and forward inputs, seeded like the harness; fake when ``mode`` is given."""
    with mode if mode is not None else contextlib.nullcontext(), torch.device(device):
        torch.manual_seed(seed)
        init_inputs = problem.get_init_inputs()
        torch.manual_seed(seed)
        model = problem.Model(*init_inputs)
        torch.manual_seed(seed)
        inputs = list(problem.get_inputs())
    if mode is None:
        model = model.to(device)
        inputs = [v.to(device) if isinstance(v, torch.Tensor) else v for v in inputs]
    return model, inputs


def capture_problem(
    path: str | Path, shape_set: str = DEFAULT_SHAPE_SET, device: str = "cpu", *, seed: int = 0
) -> CapturedGraph:
    """Capture ``Model.forward`` of the problem at ``path`` under ``shape_set``.

    A malformed file or an unknown shape set is the user's to fix (``EggInputError``); a program
    that cannot be built or captured as one graph raises ``CaptureError`` with a one-line reason.
    """
    info = inspect_problem(path)
    select_shape_sets(info, shape_set)
    try:
        problem = load_problem_module(info.path, info.shape_sets[shape_set])
    except Exception as exc:  # noqa: BLE001 - the problem's own import error
        raise CaptureError(f"importing {info.path.name} failed: {first_line(exc)}") from exc
    notes: list[str] = []
    constant_buffers: frozenset[str] = frozenset()
    try:
        model, inputs = build_problem(problem, device, FakeTensorMode(allow_non_fake_inputs=True), seed)
        constant_buffers = fake_attributes_to_buffers(model)
    except Exception as fake_exc:  # noqa: BLE001 - __init__/get_inputs may need real values
        log.debug("capture.fake_build_failed", problem=info.name, error=repr(fake_exc)[:300])
        try:
            model, inputs = build_problem(problem, device, None, seed)
        except Exception as exc:  # noqa: BLE001
            raise CaptureError(f"building Model/inputs of {info.name} failed: {first_line(exc)}") from exc
        notes.append(f"built with real tensors (the fake-tensor build failed: {first_line(fake_exc)})")
    captured = capture_module(model, inputs, notes=notes, constant_buffers=constant_buffers)
    log.debug("capture.done", problem=info.name, shape_set=shape_set, ops=len(captured.call_nodes()))
    return captured


def capture_module(
    model: nn.Module,
    inputs: Sequence[Any],
    *,
    notes: list[str] | None = None,
    constant_buffers: frozenset[str] = frozenset(),
) -> CapturedGraph:
    """Capture ``model(*inputs)`` (real or fake tensors, and Python scalars) with torch.export.

    The model's state is never changed: the export traces a functional copy of the forward.
    """
    program = export_program(model, inputs, f"{type(model).__name__}.forward")
    return canonical_graph(
        program, inputs, method="export", notes=list(notes or []), constant_buffers=constant_buffers
    )
