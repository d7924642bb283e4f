"""Trace a problem's ``Model`` with torch.fx and learn every node's shape and dtype.

The expert codegen needs the graph at the level the reference is written (``self.linear(x)``
stays one call) plus concrete metadata per node. Shapes come from running the graph under a
FakeTensorMode (no memory, no compute: KernelBench-sized weights cost nothing); real tensors are
used only when the fake run fails. The problem is built exactly as the harness builds it: seed,
``get_init_inputs()``, seed, ``Model(...)``, in training mode (KernelBench never calls eval()).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import structlog
import torch
from torch import fx, nn
from torch._subclasses.fake_tensor import FakeTensorMode

from agents.expert.fxpatch import functionalise_setitem, traceable
from egg.analysis.ops import dtype_name
from egg.problem import inspect_problem, load_problem_module

log = structlog.get_logger(__name__)


class ExpertDecline(Exception):
    """The expert has no template for this program; the message says why (shown to users)."""


@dataclass
class Meta:
    """What shape propagation learned about one node's value."""

    is_tensor: bool
    shape: list[int] = field(default_factory=list)
    dtype: str = ""
    value: Any = None  # Python scalars (sizes, flags)
    is_tuple: bool = False
    items: list[Meta] = field(default_factory=list)  # tuple results (max(dim) -> values, indices)


@dataclass
class TracedProblem:
    path: Path
    source: str
    module: ModuleType
    model: nn.Module
    gm: fx.GraphModule
    meta: dict[str, Meta]
    shape_constants: set[str]  # module-level constants some shape set overrides

    def submodule(self, target: str) -> nn.Module:
        return self.gm.get_submodule(target)


def _meta_of(value: Any) -> Meta:
    if isinstance(value, torch.Tensor):
        return Meta(is_tensor=True, shape=[int(s) for s in value.shape], dtype=dtype_name(value.dtype))
    if isinstance(value, (tuple, list)):
        return Meta(is_tensor=False, is_tuple=True, items=[_meta_of(v) for v in value])
    if isinstance(value, torch.Size):
        return Meta(is_tensor=False, value=tuple(int(s) for s in value))
    if isinstance(value, (int, float, bool)) or value is None:
        return Meta(is_tensor=False, value=value)
    return Meta(is_tensor=False, value=repr(value))


class _ShapeRecorder(fx.Interpreter):
    def __init__(self, gm: fx.GraphModule) -> None:
        super().__init__(gm)
        self.meta: dict[str, Meta] = {}

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        self.meta[n.name] = _meta_of(result)
        return result


def _build(problem: ModuleType, mode: FakeTensorMode | None) -> tuple[nn.Module, list[Any]]:
    with mode if mode is not None else contextlib.nullcontext():
        torch.manual_seed(0)
        init = problem.get_init_inputs()
        torch.manual_seed(0)
        model = problem.Model(*init)
        torch.manual_seed(0)
        inputs = list(problem.get_inputs())
    return model, inputs


def _symbolic_trace(model: nn.Module, inputs: list[Any]) -> fx.GraphModule:
    """fx trace; non-tensor forward inputs are baked in as constants (as the reference sees them)."""
    concrete: dict[str, Any] = {}
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    if all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) and len(params) >= len(inputs):
        concrete = {p.name: v for p, v in zip(params, inputs) if not isinstance(v, torch.Tensor)}
        concrete |= {p.name: p.default for p in params[len(inputs):] if p.default is not p.empty}
    # Buffers are proxied too: by default fx evaluates ``self.scale.unsqueeze(1)`` at trace time
    # and bakes the result in as ``_tensor_constant0`` (a copy of the traced buffer, possibly a
    # fake tensor, that ModelNew cannot read); proxied, it stays ``self.scale.unsqueeze(1)``. A
    # forward that branches on a buffer's value cannot be traced that way: trace it plainly then.
    # Input-sized factories and item assignment are recorded as graph nodes (fxpatch.py).
    for proxy_buffers in (True, False):
        tracer = fx.Tracer()
        tracer.proxy_buffer_attributes = proxy_buffers
        try:
            with traceable(tracer):
                graph = tracer.trace(model, concrete_args=concrete or None)
            gm = fx.GraphModule(tracer.root, graph, type(model).__name__)
            functionalise_setitem(gm)
            return gm
        except ExpertDecline:
            raise
        except Exception as exc:  # data-dependent use of a buffer: trace it plainly
            if not proxy_buffers:
                raise
            log.debug("expert.trace_buffers_concrete", error=repr(exc)[:200])
    raise AssertionError("unreachable")


def _shape_constants(path: Path) -> set[str]:
    info = inspect_problem(path)
    return {name for overrides in info.shape_sets.values() for name in overrides}


def _globals_read_by_model(source: str) -> set[str]:
    """Module-level names that ``Model``'s methods read (a traced graph bakes their values)."""
    tree = ast.parse(source)
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                    names.add(sub.id)
    return names


def trace_problem(path: str | Path, shape_set: str = "default") -> TracedProblem:
    """Build and trace the problem's Model under ``shape_set``; ExpertDecline with a reason when it
    cannot be done. Kernels are specialised to the traced dtypes, so trace the shape set the run
    times (a set with other dtypes then fails honestly in the harness)."""
    path = Path(path)
    source = path.read_text(encoding="utf-8")
    try:
        shape_constants = _shape_constants(path)
    except Exception as exc:  # noqa: BLE001 - EggInputError: a malformed problem file
        raise ExpertDecline(f"the problem file is malformed: {exc}") from None
    baked = sorted(_globals_read_by_model(source) & shape_constants)
    if baked:
        raise ExpertDecline(
            f"Model reads module-level {', '.join(baked)}, which the shape sets override: a traced "
            "forward would bake one shape set's value"
        )
    try:
        problem = load_problem_module(path, inspect_problem(path).shape_sets.get(shape_set, {}))
    except Exception as exc:  # noqa: BLE001 - the problem's own import error
        raise ExpertDecline(f"importing the problem failed: {type(exc).__name__}: {exc}") from None
    gm: fx.GraphModule | None = None
    model: nn.Module | None = None
    meta: dict[str, Meta] = {}
    failure = ""
    for mode in (FakeTensorMode(allow_non_fake_inputs=True), None):
        try:
            model, inputs = _build(problem, mode)
        except Exception as exc:  # noqa: BLE001 - try real tensors next
            failure = f"building Model/inputs failed: {type(exc).__name__}: {exc}"
            continue
        try:
            gm = _symbolic_trace(model, inputs)
        except ExpertDecline:
            raise
        except Exception as exc:  # noqa: BLE001 - fx cannot trace data-dependent control flow
            raise ExpertDecline(f"torch.fx cannot trace Model.forward ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())[:200]})") from None
        recorder = _ShapeRecorder(gm)
        try:
            with torch.no_grad(), mode if mode is not None else contextlib.nullcontext():
                recorder.run(*inputs)
        except Exception as exc:  # noqa: BLE001
            failure = f"shape propagation failed: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
            gm = None
            continue
        meta = recorder.meta
        break
    if gm is None or model is None:
        raise ExpertDecline(failure)
    log.debug("expert.traced", problem=path.name, nodes=len(gm.graph.nodes))
    return TracedProblem(path=path, source=source, module=problem, model=model, gm=gm, meta=meta,
                         shape_constants=shape_constants)
