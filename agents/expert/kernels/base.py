"""The contract between the expert codegen and its kernel templates.

The codegen (``agents/expert/codegen.py``) traces the reference ``forward`` with torch.fx, cuts it
into fusion groups, and asks the registered templates for a kernel per group. A template sees a
:class:`GroupSpec` (the group's ops in topological order, its external inputs and its single
output, all with concrete shapes and dtypes) and returns a :class:`KernelPlan`: module-level
Python source holding its ``@triton.jit`` kernel(s) and one launcher function. The codegen pastes
the source into the candidate file and replaces the group in ``forward`` with
``<plan.launcher>(*inputs)``.

Launcher contract: ``def <launcher>(<one parameter per GroupSpec.inputs entry, in order>)`` returns
the group's output tensor (a fresh tensor of ``GroupSpec.output`` shape and dtype, on the inputs'
device). Scalar inputs arrive as Python numbers. Tensor inputs may be non-contiguous: call
``.contiguous()`` or pass strides. Everything a template needs to decide must be in the GroupSpec:
shapes are those of the traced shape set, but the kernel must work for every shape set of the
problem (read sizes from the tensors at run time; use shapes only for heuristics).
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, Field


class ValueSpec(BaseModel):
    """A value flowing into or out of a group."""

    name: str  # a Python identifier, unique in the group
    is_tensor: bool = True
    shape: list[int] = Field(default_factory=list)
    dtype: str = "float32"  # torch dtype name without "torch."; for scalars "float"/"int"/"bool"
    value: Any = None  # scalars only


class NodeSpec(BaseModel):
    """One op of the group, in the analysis's canonical vocabulary (egg.analysis.optable keys)."""

    name: str  # Python identifier, unique in the group
    op: str  # canonical key: "add", "relu", "softmax", "sum", "layer_norm", ...
    operands: list[str | float | int | bool | None]  # names of group inputs/earlier nodes, or literals
    kwargs: dict[str, Any] = Field(default_factory=dict)  # static args: dim, keepdim, eps, negative_slope...
    shape: list[int] = Field(default_factory=list)  # output shape
    dtype: str = "float32"


class GroupSpec(BaseModel):
    nodes: list[NodeSpec]
    inputs: list[ValueSpec]
    output: str  # name of the node whose value leaves the group
    # other nodes whose values leave the group too (elementwise chains, and prologue values of
    # templates with ``writes_prologue_outputs``; same shape as output): the launcher then returns
    # ``(output, *extra_outputs)``, one kernel writing them all
    extra_outputs: list[str] = Field(default_factory=list)
    kind: str = "elementwise_chain"  # elementwise_chain | reduction | normalization | softmax | scan | loss | pooling | matmul | ...
    anchor: str | None = None  # the node the group is built around (reduction, matmul, ...)

    def node(self, name: str) -> NodeSpec:
        return next(n for n in self.nodes if n.name == name)

    @property
    def out(self) -> NodeSpec:
        return self.node(self.output)


class KernelPlan(BaseModel):
    launcher: str  # name of the launcher function defined in ``source``
    source: str  # module-level Python: imports are added by the codegen (torch, triton, tl, math)
    structure: str  # one line for people: "row softmax, one pass, whole row in registers"
    principle_ids: list[str] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)  # the tunables this rendering used


class Template(Protocol):
    name: str

    def match(self, group: GroupSpec) -> bool:
        """True if this template can compute the whole group exactly (semantics preserved)."""
        ...

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        """Parameter -> candidate values for stage 2 (may be empty)."""
        ...

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        """The heuristic choice (used on CPU, and as stage 1's config)."""
        ...

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        """Kernel source for ``group`` with ``config``; the launcher must be named ``launcher``."""
        ...
