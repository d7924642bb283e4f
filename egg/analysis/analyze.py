"""The one analysis: computed from the canonical graph ``egg.capture`` produces.

Op classes come from ATen ops (plus the classes of the patterns found: a LayerNorm's reductions
are also NORMALIZATION), FLOPs and bytes from each op run alone, views cost nothing, and the
roofline bounds the whole program on the H200.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog
from torch import fx, nn

from egg.analysis.cost import spec_bytes
from egg.analysis.fusion import fusion_groups
from egg.analysis.models import PatternMatch, ProblemAnalysis, TensorSpec
from egg.analysis.ops import op_node, tensor_spec, value_spec
from egg.analysis.patterns import PATTERN_CLASSES, find_patterns
from egg.analysis.roofline import roofline, tensor_core_rate, vector_rate
from egg.capture import CapturedGraph, CaptureError, capture_module, capture_problem
from egg.problem import DEFAULT_SHAPE_SET, inspect_problem, select_shape_sets
from egg.vocabulary import Bottleneck, OpClass

log = structlog.get_logger(__name__)

_TENSOR_CORE = {OpClass.MATMUL, OpClass.CONV, OpClass.ATTENTION}


def _position(target: int | str) -> tuple[int, str]:
    text = str(target)
    digits = text.split("[", 1)[0]
    return (int(digits) if digits.isdigit() else 0, text)


def _input_specs(captured: CapturedGraph) -> list[TensorSpec]:
    """Forward arguments in order: tensors as graph inputs, scalars with the value baked in."""
    entries: list[tuple[tuple[int, str], TensorSpec]] = []
    placeholders = {n.name: n for n in captured.gm.graph.nodes if n.op == "placeholder"}
    for graph_input in captured.inputs:
        if graph_input.kind == "user_input":
            value = placeholders[graph_input.name].meta["val"]
            entries.append((_position(graph_input.target), tensor_spec(graph_input.name, value)))
    for name, target, value in captured.scalar_inputs:
        entries.append((_position(target), value_spec(name, value)))
    return [spec for _, spec in sorted(entries, key=lambda e: e[0])]


def _output_specs(captured: CapturedGraph) -> list[TensorSpec]:
    values = [out.meta.get("val") if isinstance(out, fx.Node) else out for out in captured.outputs]
    if len(values) == 1:
        return [value_spec("output", values[0])]
    return [value_spec(f"output{i}", v) for i, v in enumerate(values)]


def analyze_captured(
    captured: CapturedGraph, name: str, shape_set: str = DEFAULT_SHAPE_SET, *, allow_tf32: bool = False
) -> ProblemAnalysis:
    """The analysis of a canonical graph."""
    placeholders = {n.name: n for n in captured.gm.graph.nodes if n.op == "placeholder"}
    state = {g.name: g for g in captured.inputs if g.kind != "user_input"}

    def name_of(node: fx.Node) -> str:
        return str(state[node.name].target) if node.name in state else node.name

    ops = [op_node(node, name_of) for node in captured.call_nodes()]
    inputs = _input_specs(captured)
    outputs = _output_specs(captured)
    parameters = [
        tensor_spec(str(g.target), placeholders[g.name].meta["val"]) for g in captured.inputs if g.name in state
    ]
    used = [placeholders[g.name].meta["val"] for g in captured.inputs if placeholders[g.name].users]
    written = [n.meta["val"] for n in captured.gm.graph.nodes if n.name in set(captured.mutations.values())]
    moved = [tensor_spec("moved", v) for v in used + written] + outputs
    min_bytes = sum(spec_bytes(s) for s in moved)
    flops = sum(op.flops for op in ops)
    compute_s = sum(op.flops / _rate(op.op_class, op.dtype, allow_tf32) for op in ops)
    roofline_ms, bottleneck = roofline(compute_s, min_bytes)
    patterns = find_patterns(captured)
    notes = list(captured.notes)
    unknown = sorted({op.target for op in ops if op.op_class == OpClass.OTHER and not op.is_view})
    if unknown:
        notes.append(f"unclassified ops (no FLOPs counted): {', '.join(unknown)}")
    zero = sorted({op.target for op in ops if op.op_class in _TENSOR_CORE and op.flops == 0})
    if zero:
        notes.append(f"FLOPs unknown for: {', '.join(zero)}")
    classes = {op.op_class for op in ops if not op.is_view} | {
        PATTERN_CLASSES[p.family] for p in patterns if p.family in PATTERN_CLASSES
    }
    analysis = ProblemAnalysis(
        problem=name,
        shape_set=shape_set,
        inputs=inputs,
        outputs=outputs,
        parameters=parameters,
        ops=ops,
        op_classes=sorted(classes, key=lambda c: c.value),
        fusion_groups=fusion_groups(ops, _row_blocks(patterns)),
        flops=flops,
        min_bytes=min_bytes,
        unfused_bytes=sum(op.bytes for op in ops),
        arithmetic_intensity=flops / min_bytes if min_bytes else 0.0,
        bottleneck=bottleneck,
        roofline_ms=roofline_ms,
        trace_method=captured.method,
        notes=notes,
        patterns=patterns,
    )
    log.info(
        "analysis.done", problem=name, shape_set=shape_set, trace=captured.method, ops=len(ops),
        patterns=[p.family for p in patterns], bottleneck=bottleneck.value, roofline_ms=roofline_ms,
    )
    return analysis


def _rate(op_class: OpClass, dtype: str | None, allow_tf32: bool) -> float:
    return tensor_core_rate(dtype, allow_tf32) if op_class in _TENSOR_CORE else vector_rate(dtype)


def _row_blocks(patterns: list[PatternMatch]) -> frozenset[str]:
    """Ops of the patterns that need whole rows (softmax and norm families)."""
    rows = {"softmax", "log_softmax", "logsumexp", "cross_entropy"} | {
        family for family, op_class in PATTERN_CLASSES.items() if op_class == OpClass.NORMALIZATION
    }
    return frozenset(name for p in patterns if p.family in rows for name in p.nodes)


def _unanalysable(name: str, shape_set: str, note: str) -> ProblemAnalysis:
    return ProblemAnalysis(
        problem=name, shape_set=shape_set, inputs=[], outputs=[], parameters=[], ops=[],
        op_classes=[], fusion_groups=[], flops=0, min_bytes=0, unfused_bytes=0,
        arithmetic_intensity=0.0, bottleneck=Bottleneck.LATENCY, roofline_ms=0.0,
        trace_method="none", notes=[note[:500], "no graph: op classes, FLOPs, bytes and fusion are unknown"],
    )


def analyze_module(
    module: nn.Module,
    inputs: Sequence[Any],
    name: str = "module",
    *,
    shape_set: str = DEFAULT_SHAPE_SET,
    allow_tf32: bool = False,
) -> ProblemAnalysis:
    """Analyse ``module`` called on ``inputs`` (tensors, real or fake, and Python scalars).

    Never raises for a program it cannot capture: the result has ``trace_method == "none"`` and
    a note saying why. The module's parameters and buffers are left as they were.
    """
    try:
        captured = capture_module(module, inputs)
    except CaptureError as exc:
        return _unanalysable(name, shape_set, f"capture failed: {exc}")
    return analyze_captured(captured, name, shape_set, allow_tf32=allow_tf32)


def analyze_problem(
    problem_path: str | Path, shape_set: str = DEFAULT_SHAPE_SET, device: str = "cpu"
) -> ProblemAnalysis:
    """Analyse a KernelBench-format problem file under one of its shape sets.

    A malformed file or an unknown shape set is the user's to fix (EggInputError). A problem
    that cannot be captured still gets an analysis, with a note saying why (the capture's
    one-line reason, which the expert agents also give when they decline).
    """
    info = inspect_problem(problem_path)
    select_shape_sets(info, shape_set)
    try:
        captured = capture_problem(info.path, shape_set, device)
    except CaptureError as exc:
        log.warning("analysis.capture_failed", problem=info.name, reason=str(exc))
        return _unanalysable(info.name, shape_set, f"capture failed: {exc}")
    return analyze_captured(captured, info.name, shape_set, allow_tf32=info.allow_tf32)
