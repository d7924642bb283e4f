"""The analysis of a reference program, as data: what the agents and principle retrieval read."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from egg.vocabulary import Bottleneck, OpClass

TraceMethod = Literal["fx", "export", "none"]
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
    """One op of the traced forward, with its cost when run alone (unfused)."""

    name: str  # graph node name
    target: str  # canonical op name: "operator.add", "torch.nn.functional.softmax", "linear"
    op_class: OpClass  # OTHER for views; see is_view
    is_view: bool = False  # views, metadata queries, tuple selection: free, not in op_classes
    module: str | None = None  # submodule path for nn.Module leaves ("encoder.linear")
    params: dict[str, list[int]] = Field(default_factory=dict)  # a module leaf's own weights
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

    def describe(self) -> str:
        """Multi-line text for people and LLMs, with every size stated explicitly."""
        from egg.analysis.describe import describe_analysis

        return describe_analysis(self)
