"""Entry points: analyse a problem file or a module with inputs."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

from egg.analysis.capture import Capture, capture
from egg.analysis.cost import spec_bytes
from egg.analysis.fusion import fusion_groups
from egg.analysis.models import ProblemAnalysis, TensorSpec
from egg.analysis.ops import tensor_spec, value_spec
from egg.analysis.roofline import roofline, tensor_core_rate, vector_rate
from egg.problem import DEFAULT_SHAPE_SET, inspect_problem, load_problem_module, select_shape_sets
from egg.vocabulary import Bottleneck, OpClass

log = structlog.get_logger(__name__)

_TENSOR_CORE = {OpClass.MATMUL, OpClass.CONV, OpClass.ATTENTION}


def _input_specs(module: nn.Module, inputs: Sequence[Any]) -> list[TensorSpec]:
    try:
        names = [
            p.name
            for p in inspect.signature(module.forward).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        names = []
    names += [f"input{i}" for i in range(len(names), len(inputs))]
    return [value_spec(name, value) for name, value in zip(names, inputs)]


def _parameter_specs(module: nn.Module) -> list[TensorSpec]:
    named = list(module.named_parameters()) + list(module.named_buffers())
    return [tensor_spec(name, value) for name, value in named]


def _assemble(
    name: str,
    shape_set: str,
    module: nn.Module,
    inputs: Sequence[Any],
    captured: Capture,
    allow_tf32: bool,
) -> ProblemAnalysis:
    specs = _input_specs(module, inputs)
    parameters = _parameter_specs(module)
    notes = list(captured.notes)
    if not captured.outputs_known:
        notes.append("outputs unknown: minimum bytes count inputs and parameters only")
    ops = captured.ops
    min_bytes = sum(spec_bytes(s) for s in [*specs, *captured.outputs, *parameters])
    flops = sum(op.flops for op in ops)
    compute_s = sum(
        op.flops
        / (
            tensor_core_rate(op.dtype, allow_tf32)
            if op.op_class in _TENSOR_CORE
            else vector_rate(op.dtype)
        )
        for op in ops
    )
    roofline_ms, bottleneck = roofline(compute_s, min_bytes)
    unknown = sorted({op.target for op in ops if op.op_class == OpClass.OTHER and not op.is_view})
    if unknown:
        notes.append(f"unclassified ops (no FLOPs counted): {', '.join(unknown)}")
    zero = sorted(
        {op.target for op in ops if op.op_class in _TENSOR_CORE and op.flops == 0}
    )
    if zero:
        notes.append(f"FLOPs unknown for: {', '.join(zero)}")
    analysis = ProblemAnalysis(
        problem=name,
        shape_set=shape_set,
        inputs=specs,
        outputs=captured.outputs,
        parameters=parameters,
        ops=ops,
        op_classes=sorted({op.op_class for op in ops if not op.is_view}, key=lambda c: c.value),
        fusion_groups=fusion_groups(ops),
        flops=flops,
        min_bytes=min_bytes,
        unfused_bytes=sum(op.bytes for op in ops),
        arithmetic_intensity=flops / min_bytes if min_bytes else 0.0,
        bottleneck=bottleneck,
        roofline_ms=roofline_ms,
        trace_method=captured.method,
        notes=notes,
    )
    log.info(
        "analysis.done",
        problem=name,
        shape_set=shape_set,
        trace=captured.method,
        ops=len(ops),
        bottleneck=bottleneck.value,
        roofline_ms=roofline_ms,
    )
    return analysis


def analyze_module(
    module: nn.Module,
    inputs: Sequence[Any],
    name: str = "module",
    *,
    shape_set: str = DEFAULT_SHAPE_SET,
    allow_tf32: bool = False,
) -> ProblemAnalysis:
    """Analyse ``module`` called on ``inputs`` (tensors, real or fake, and Python scalars).

    Never raises for a program it cannot trace: the result has ``trace_method == "none"`` and
    notes saying why.
    """
    return _assemble(name, shape_set, module, list(inputs), capture(module, inputs), allow_tf32)


def _build(problem: Any, device: str, mode: FakeTensorMode | None) -> tuple[nn.Module, list[Any]]:
    """Model and forward inputs, seeded like the harness; fake tensors when ``mode`` is given."""
    # Fake parameters cannot be moved with .to(); creating them on the device does the same.
    with mode if mode is not None else contextlib.nullcontext(), torch.device(device):
        torch.manual_seed(0)
        model = problem.Model(*problem.get_init_inputs())
        torch.manual_seed(0)
        values = list(problem.get_inputs())
    if mode is None:
        model = model.to(device)
        values = [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]
    return model, values


def _unanalysable(name: str, shape_set: str, note: str) -> ProblemAnalysis:
    return ProblemAnalysis(
        problem=name, shape_set=shape_set, inputs=[], outputs=[], parameters=[], ops=[],
        op_classes=[], fusion_groups=[], flops=0, min_bytes=0, unfused_bytes=0,
        arithmetic_intensity=0.0, bottleneck=Bottleneck.LATENCY, roofline_ms=0.0,
        trace_method="none", notes=[note[:500]],
    )


def analyze_problem(
    problem_path: str | Path, shape_set: str = DEFAULT_SHAPE_SET, device: str = "cpu"
) -> ProblemAnalysis:
    """Analyse a KernelBench-format problem file under one of its shape sets.

    A malformed file or an unknown shape set is the user's to fix (EggInputError). A problem
    that cannot be built or traced still gets an analysis, with notes saying what is missing.
    """
    info = inspect_problem(problem_path)
    select_shape_sets(info, shape_set)
    try:
        problem = load_problem_module(info.path, info.shape_sets[shape_set])
    except Exception as exc:  # noqa: BLE001 - analysis must not stop an optimisation run
        return _unanalysable(info.name, shape_set, f"importing the problem failed: {exc!r}")
    captured: Capture | None = None
    try:
        # Fake tensors first: shapes without allocating or initialising KernelBench-sized
        # weights and inputs (a 32768x32768 Linear is 4 GB).
        model, inputs = _build(problem, device, FakeTensorMode(allow_non_fake_inputs=True))
        captured = capture(model, inputs, stop_for_real=True)
    except Exception as exc:  # noqa: BLE001 - Model/get_inputs may need real values
        log.debug("analysis.fake_build_failed", problem=info.name, error=repr(exc))
    if captured is None or captured.retry_real:
        try:
            model, inputs = _build(problem, device, None)
        except Exception as exc:  # noqa: BLE001
            log.warning("analysis.build_failed", problem=info.name, error=repr(exc))
            return _unanalysable(info.name, shape_set, f"building Model/inputs failed: {exc!r}")
        captured = capture(model, inputs)
        captured.notes.append("analysed with real tensors (the fake-tensor run was incomplete)")
    return _assemble(info.name, shape_set, model, inputs, captured, info.allow_tf32)
