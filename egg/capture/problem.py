"""``capture_problem``: a KernelBench-format problem file as one canonical graph.

The problem is built the way the judge builds it (seed, ``get_init_inputs()``, seed,
``Model(...)``, seed, ``get_inputs()``, in training mode as KernelBench leaves it) under a
``FakeTensorMode`` (or on the meta device, then made fake): shapes, dtypes and strides without
memory or compute, so a 16384 x 16384 weight costs nothing. Real tensors are used only when both
fail (an ``__init__`` that reads values, for instance); either way the forward itself is only
ever traced.
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
from torch._subclasses.fake_tensor import FakeTensorConverter, FakeTensorMode

from egg.capture.export import CAPTURE_LOCK, canonical_graph, export_program, fake_attributes_to_buffers, first_line
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


def _fakeify(mode: FakeTensorMode, value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor) and value.is_meta:
        return FakeTensorConverter().from_meta_and_device(mode, value, device)
    return value


def build_on_meta(problem: ModuleType, device: str, mode: FakeTensorMode, seed: int = 0) -> tuple[nn.Module, list[Any]]:
    """Build on the meta device, then make every tensor a fake one on ``device``.

    For an ``__init__`` that converts its fake parameters (``.to(torch.bfloat16)``, ``.half()``):
    ``Module._apply`` swaps fake parameters in place, which fails on the weak references fake
    tensors carry, while meta parameters convert like real ones.
    """
    model, inputs = build_problem(problem, "meta", None, seed)
    target = torch.device(device)
    for sub in model.modules():
        for name, param in list(sub._parameters.items()):  # noqa: SLF001 - replacing them is the point
            if param is not None:
                sub._parameters[name] = nn.Parameter(_fakeify(mode, param, target), param.requires_grad)
        for name, buffer in list(sub._buffers.items()):  # noqa: SLF001
            if buffer is not None:
                sub._buffers[name] = _fakeify(mode, buffer, target)
        for name, value in list(vars(sub).items()):
            if isinstance(value, torch.Tensor) and value.is_meta:
                setattr(sub, name, _fakeify(mode, value, target))
    return model, [_fakeify(mode, v, target) for v in inputs]


def build_fake(problem: ModuleType, device: str, seed: int = 0) -> tuple[nn.Module, list[Any]]:
    """The problem on fake tensors: built under a FakeTensorMode, else on meta and fakeified."""
    try:
        return build_problem(problem, device, FakeTensorMode(allow_non_fake_inputs=True), seed)
    except Exception as exc:  # noqa: BLE001 - try the meta device next
        log.debug("capture.fake_mode_build_failed", error=first_line(exc))
        return build_on_meta(problem, device, FakeTensorMode(allow_non_fake_inputs=True), seed)


def capture_problem(
    path: str | Path, shape_set: str = DEFAULT_SHAPE_SET, device: str = "cpu", *, seed: int = 0
) -> CapturedGraph:
    """Capture ``Model.forward`` of the problem at ``path`` under ``shape_set``.

    A malformed file or an unknown shape set is the user's to fix (``EggInputError``); a program
    that cannot be built or captured as one graph raises ``CaptureError`` with a one-line reason.
    """
    with CAPTURE_LOCK:
        return _capture_problem(path, shape_set, device, seed)


def _capture_problem(path: str | Path, shape_set: str, device: str, seed: int) -> CapturedGraph:
    info = inspect_problem(path)
    select_shape_sets(info, shape_set)
    try:
        problem = load_problem_module(info.path, info.shape_sets[shape_set])
    except Exception as exc:  # noqa: BLE001 - the problem's own import error
        raise CaptureError(f"importing {info.path.name} failed: {first_line(exc)}") from exc
    notes: list[str] = []
    try:
        model, inputs = build_fake(problem, device, seed)
    except Exception as fake_exc:  # noqa: BLE001 - __init__/get_inputs may need real values
        log.debug("capture.fake_build_failed", problem=info.name, error=first_line(fake_exc))
        try:
            model, inputs = build_problem(problem, device, None, seed)
        except Exception as exc:  # noqa: BLE001
            raise CaptureError(f"building Model/inputs of {info.name} failed: {first_line(exc)}") from exc
        notes.append(f"built with real tensors (the fake-tensor build failed: {first_line(fake_exc)})")
    constant_buffers = fake_attributes_to_buffers(model)
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
    with CAPTURE_LOCK:
        program = export_program(model, inputs, f"{type(model).__name__}.forward")
        return canonical_graph(
            program, inputs, method="export", notes=list(notes or []), constant_buffers=constant_buffers
        )
