"""The analysis of a reference program, as data: what the agents and principle retrieval read."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from egg.vocabulary import Bottleneck, OpClass

# "export": a problem file captured with torch.export; "dynamo": a graph TorchDynamo handed the
# egg backend; "fx" is kept for analyses recorded before the capture moved to egg.capture.
TraceMethod = Literal["fx", "export", "dynamo", "none"]
FusionKind = Literal[
    "elementwise_chain", "reduction_epilogue", "matmul_epilogue", "conv_epilogue", "single"
]


class TensorSpec(BaseModel):
    """A forward input/output or a parameter. Non-tensors are scalars: shape [] and a value."""

    name: str
    shape: list[int]
    dtype: str  # "float32", "int64", ...; for Python scalars the type name ("int", "float")
    is_tensor: bool = True
    value: int | float | bool | str | None = None  # only for scalars

    @property
    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count

    def text(self) -> str:
        """``x: float32[16, 16384]`` for tensors, ``dim: int = 1`` for scalars."""
        if not self.is_tensor:
            return f"{self.name}: {self.dtype} = {self.value!r}"
        return f"{self.name}: {self.dtype}[{', '.join(map(str, self.shape))}]"


class OpNode(BaseModel):
    """One op of the canonical graph, with its cost when run alone (unfused)."""

    name: str  # graph node name
    target: str  # ATen op: "aten.add.Tensor", "aten.mm.default"; "getitem" picks a tuple element
    op_class: OpClass  # OTHER for views; see is_view
    is_view: bool = False  # views and tuple selection: free, not in op_classes
    module: str | None = None  # the submodule whose forward ran it ("layers.0.mlp.up_proj")
    params: dict[str, list[int]] = Field(default_factory=dict)  # unused since the ATen capture
    inputs: list[str] = Field(default_factory=list)  # producer node names (graph inputs too)
    input_shapes: list[list[int]] = Field(default_factory=list)  # tensor inputs, in order
    output_shape: list[int] | None = None  # first tensor output; None for non-tensor results
    dtype: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)  # JSON-able static arguments
    flops: int = 0
    bytes: int = 0  # read every input (and module parameter) once, write the output once


class FusionGroup(BaseModel):
    """Ops that one kernel could compute without writing intermediates to memory."""

    nodes: list[str]
    kind: FusionKind
    anchor: str | None = None  # the matmul/conv/reduction the group is built around


class PatternMatch(BaseModel):
    """A known computation found in the graph by structure (``egg.analysis.patterns``).

    ``family``: ``rms_norm``, ``layer_norm``, ``softmax``, ``rotary``, ... ``nodes``: the graph
    nodes it covers, in graph order. ``params``: what a kernel needs to know (dims, eps, layout,
    the weight's input name, whether the input is upcast, ...), as JSON values.
    """

    family: str
    nodes: list[str]
    params: dict[str, Any] = Field(default_factory=dict)


class ProblemAnalysis(BaseModel):
    problem: str
    shape_set: str
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    parameters: list[TensorSpec]
    ops: list[OpNode]
    op_classes: list[OpClass]  # sorted, unique, views excluded
    fusion_groups: list[FusionGroup]
    flops: int
    min_bytes: int  # inputs + outputs + parameters, each moved once
    unfused_bytes: int  # sum of per-op bytes: roughly what eager PyTorch moves
    arithmetic_intensity: float  # flops / min_bytes
    bottleneck: Bottleneck
    roofline_ms: float  # lower bound on the H200
    trace_method: TraceMethod
    notes: list[str] = Field(default_factory=list)
    patterns: list[PatternMatch] = Field(default_factory=list)

    def describe(self) -> str:
        """Multi-line text for people and LLMs, with every size stated explicitly."""
        from egg.analysis.describe import describe_analysis

        return describe_analysis(self)
