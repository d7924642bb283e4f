"""ProblemAnalysis as text for people and LLMs.

LLMs ignore sizes unless they are spelled out, so every tensor is written as
``name: dtype[d0, d1]`` and every count is given exactly (with a readable approximation).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from egg.analysis.cost import spec_bytes
from egg.analysis.models import OpNode
from egg.analysis.roofline import H200_ROOFLINE

if TYPE_CHECKING:
    from egg.analysis.models import ProblemAnalysis

MAX_OPS_LISTED = 200  # a level-3 network has hundreds; the totals still cover every op
_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"))


def quantity(count: int | float, unit: str) -> str:
    """``1,234,567 B (1.23 MB)``: exact for the reader who computes, rounded for the skimmer."""
    exact = f"{count:,}" if isinstance(count, int) else f"{count:,.3g}"
    for scale, prefix in _PREFIXES:
        if abs(count) >= scale:
            return f"{exact} {unit} ({count / scale:.3g} {prefix}{unit})"
    return f"{exact} {unit}"


def _shape(shape: list[int]) -> str:
    return f"[{', '.join(map(str, shape))}]"


def _op_line(index: int, op: OpNode) -> str:
    where = f" (module {op.module})" if op.module else ""
    label = "view, free" if op.is_view else op.op_class.value
    ins = ", ".join(_shape(s) for s in op.input_shapes) or "-"
    out = f"{op.dtype}{_shape(op.output_shape)}" if op.output_shape is not None else "non-tensor"
    line = f"  {index}. {op.name} = {op.target}{where} [{label}]: {ins} -> {out}"
    if op.params:
        line += "; params " + ", ".join(f"{k}{_shape(v)}" for k, v in op.params.items())
    if op.args:
        line += "; " + ", ".join(f"{k}={json.dumps(v)}" for k, v in op.args.items())
    if not op.is_view:
        line += f"; {quantity(op.flops, 'FLOP')}, {quantity(op.bytes, 'B')}"
    return line


def describe_analysis(analysis: ProblemAnalysis) -> str:
    a = analysis
    lines = [
        f"Problem {a.problem} (shape set '{a.shape_set}'), traced with {a.trace_method}"
        + (" (canonical ATen ops; views are index maps and cost nothing)." if a.ops else "."),
        f"Inputs ({len(a.inputs)}):",
        *(f"  {spec.text()}" for spec in a.inputs),
        f"Outputs ({len(a.outputs)}):",
        *(f"  {spec.text()}" for spec in a.outputs),
    ]
    if a.parameters:
        total = sum(spec_bytes(p) for p in a.parameters)
        lines.append(f"Parameters and buffers ({len(a.parameters)}, {quantity(total, 'B')}):")
        lines += [f"  {spec.text()}" for spec in a.parameters]
    else:
        lines.append("Parameters and buffers: none")
    compute = [op for op in a.ops if not op.is_view]
    lines.append(
        f"Ops ({len(compute)} computing, {len(a.ops) - len(compute)} views; "
        "cost of each op run alone):"
    )
    lines += [_op_line(i, op) for i, op in enumerate(a.ops[:MAX_OPS_LISTED], 1)]
    if len(a.ops) > MAX_OPS_LISTED:
        lines.append(f"  ... {len(a.ops) - MAX_OPS_LISTED} more ops not listed")
    classes = ", ".join(c.value for c in a.op_classes) or "unknown"
    lines.append(f"Op classes: {classes}")
    if a.patterns:
        lines.append("Patterns found (by structure, whatever the spelling):")
        for match in a.patterns:
            params = ", ".join(f"{k}={json.dumps(v)}" for k, v in match.params.items() if v is not None)
            span = f"{match.nodes[0]} .. {match.nodes[-1]}" if len(match.nodes) > 1 else match.nodes[0]
            lines.append(f"  {match.family} ({len(match.nodes)} ops: {span}): {params}")
    if a.fusion_groups:
        lines.append("Fusion candidates (greedy):")
        for group in a.fusion_groups:
            anchor = f" around {group.anchor}" if group.anchor and group.kind != "single" else ""
            lines.append(f"  {group.kind}{anchor}: {' -> '.join(group.nodes)}")
    bandwidth = H200_ROOFLINE["memory_bytes_per_s"] / 1e12
    latency_us = H200_ROOFLINE["latency_floor_s"] * 1e6
    bottleneck = a.bottleneck.value
    if bottleneck == "latency":
        bottleneck += f" (floor under {latency_us:g} us: too little work to fill the GPU)"
    lines += [
        f"Total work: {quantity(a.flops, 'FLOP')}",
        f"Minimum bytes (inputs + outputs + parameters, each once): {quantity(a.min_bytes, 'B')}",
        f"Unfused bytes (sum over the ops, each run alone): {quantity(a.unfused_bytes, 'B')}",
        f"Arithmetic intensity: {a.arithmetic_intensity:.3g} FLOP/B",
        f"H200 roofline ({bandwidth:g} TB/s memory): {a.roofline_ms:.4g} ms "
        f"({a.roofline_ms * 1e3:.4g} us); "
        f"bottleneck: {bottleneck}",
    ]
    if a.notes:
        lines.append("Notes:")
        lines += [f"  - {note}" for note in a.notes]
    return "\n".join(lines)
