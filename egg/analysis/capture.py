"""Capture the ops of a module's forward: fx first, torch.export second, else nothing.

fx (``symbolic_trace``) keeps ``nn.Conv2d``/``nn.Linear``/``nn.LayerNorm`` as single module calls,
which is the level an expert reasons at; its graph is then executed node by node to learn every
shape. Execution runs under a FakeTensorMode when it can (shapes and dtypes without compute or
memory, so KernelBench-sized inputs cost nothing); real tensors are used only when given and the
fake run fails (data-dependent ops). torch.export handles Python control flow on shapes that fx
cannot trace, at the price of ATen-level ops. When both fail (control flow on tensor values) the
capture is empty and says why: analysis must never stop an optimisation run.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Sequence
from typing import Any

import structlog
import torch
from pydantic import BaseModel, Field
from torch import fx, nn
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.node import _get_qualified_name
from torch.utils._pytree import tree_flatten

from egg.analysis.models import OpNode, TensorSpec, TraceMethod
from egg.analysis.ops import (
    build_op,
    getitem_key,
    module_args,
    module_params,
    operands_of,
    static_args,
    value_spec,
)
from egg.analysis.optable import canonical_target, module_key, op_key

log = structlog.get_logger(__name__)


class Capture(BaseModel):
    method: TraceMethod
    ops: list[OpNode] = Field(default_factory=list)
    outputs: list[TensorSpec] = Field(default_factory=list)
    outputs_known: bool = True
    # A step failed only because the inputs were fake: real inputs would capture more.
    retry_real: bool = False
    notes: list[str] = Field(default_factory=list)


def _short(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first[:200]}"


def output_specs(result: Any) -> list[TensorSpec]:
    leaves = tree_flatten(result)[0]
    if len(leaves) == 1:
        return [value_spec("output", leaves[0])]
    return [value_spec(f"output{i}", leaf) for i, leaf in enumerate(leaves)]


def _fake_mode(inputs: Sequence[Any]) -> FakeTensorMode:
    for value in inputs:
        if isinstance(value, FakeTensor):
            return value.fake_mode
    # Parameters stay real; the mode converts them on the fly.
    return FakeTensorMode(allow_non_fake_inputs=True)


def _fakeify(mode: FakeTensorMode, inputs: Sequence[Any]) -> list[Any]:
    return [
        mode.from_tensor(v) if isinstance(v, torch.Tensor) and not isinstance(v, FakeTensor) else v
        for v in inputs
    ]


@contextlib.contextmanager
def _running(mode: FakeTensorMode | None) -> Iterator[None]:
    with torch.no_grad(), (mode if mode is not None else contextlib.nullcontext()):
        yield


# ---------------------------------------------------------------- fx


def _fx_name(node: Any) -> str | None:
    if not isinstance(node, fx.Node):
        return None
    return str(node.target) if node.op == "get_attr" else node.name


def _qualified(fn: Any) -> str:
    """Canonical name of a call_function target: ``torch.relu``, ``aten.add``, ``operator.add``."""
    if isinstance(fn, torch._ops.OpOverload):
        return canonical_target(str(fn))
    try:
        return canonical_target(_get_qualified_name(fn))
    except Exception:  # noqa: BLE001 - some builtins have no qualified name
        return getattr(fn, "__name__", repr(fn))


class _Recorder(fx.Interpreter):
    """Runs an fx graph and turns each executed call into an OpNode."""

    def __init__(self, gm: fx.GraphModule) -> None:
        super().__init__(gm)
        self.ops: list[OpNode] = []

    def call_module(self, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        sub = self.fetch_attr(str(target))
        if isinstance(sub, nn.RNNBase) and args and isinstance(args[0], torch.Tensor):
            # Under fake tensors an RNN runs step by step through the dispatcher (25 s for a
            # 512-step GRU); its output shapes follow from its configuration.
            return rnn_result(sub, args[0])
        return super().call_module(target, args, kwargs)

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        if n.op in ("call_function", "call_method", "call_module"):
            op = self._describe(n, result)
            if op is not None:
                self.ops.append(op)
        return result

    def _describe(self, n: fx.Node, result: Any) -> OpNode | None:
        names, operands = operands_of((n.args, n.kwargs), self.env.__getitem__, _fx_name)
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        common = {"name": n.name, "inputs": names, "operands": operands, "result": result}
        if n.op == "call_module":
            sub = self.module.get_submodule(str(n.target))
            key = module_key(type(sub).__name__)
            return build_op(
                target=key, key=key, module=str(n.target), args=module_args(sub, key),
                params=module_params(sub), **common,
            )
        if n.op == "call_method":
            fn = getattr(torch, str(n.target), None) or getattr(torch.Tensor, str(n.target))
            target = f"Tensor.{n.target}"
        else:
            fn = n.target
            target = _qualified(fn)
        key = op_key(target)
        if key.startswith("assert"):
            return None  # guards fx inserts for specialised scalar inputs
        if key == "getitem" and n.args and isinstance(n.args[0], fx.Node):
            key = getitem_key(self.env[n.args[0]])
        return build_op(target=target, key=key, args=static_args(fn, args, kwargs), **common)


def rnn_result(rnn: nn.RNNBase, x: torch.Tensor) -> Any:
    """Uninitialised tensors shaped like ``rnn(x)``: (output, h_n) or (output, (h_n, c_n))."""
    directions = 2 if rnn.bidirectional else 1
    out_size = rnn.proj_size if getattr(rnn, "proj_size", 0) > 0 else rnn.hidden_size
    output = x.new_empty([*x.shape[:-1], directions * out_size])
    batch = [] if x.dim() == 2 else [x.shape[0] if rnn.batch_first else x.shape[1]]
    h_n = x.new_empty([rnn.num_layers * directions, *batch, out_size])
    if isinstance(rnn, nn.LSTM):
        return output, (h_n, x.new_empty([rnn.num_layers * directions, *batch, rnn.hidden_size]))
    return output, h_n


def _symbolic_trace(module: nn.Module, inputs: Sequence[Any]) -> fx.GraphModule:
    """fx trace with non-tensor inputs baked in (so `if dim == 1:` and `sum(dim=dim)` trace)."""
    concrete: dict[str, Any] = {}
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    if positional and len(params) >= len(inputs):
        concrete = {
            p.name: v for p, v in zip(params, inputs) if not isinstance(v, torch.Tensor)
        }
        # Parameters the problem does not pass keep their defaults (`if h0 is None:` traces).
        concrete |= {p.name: p.default for p in params[len(inputs) :] if p.default is not p.empty}
    return fx.symbolic_trace(module, concrete_args=concrete or None)


def _propagate(gm: fx.GraphModule, inputs: list[Any], mode: FakeTensorMode | None) -> Capture:
    recorder = _Recorder(gm)
    with _running(mode):
        result = recorder.run(*inputs)
    return Capture(method="fx", ops=recorder.ops, outputs=output_specs(result))


def _capture_fx(
    module: nn.Module, inputs: Sequence[Any], notes: list[str], flags: dict[str, bool]
) -> Capture | None:
    try:
        gm = _symbolic_trace(module, inputs)
    except Exception as exc:  # noqa: BLE001 - any trace failure means "try the next method"
        notes.append(f"fx symbolic_trace failed ({_short(exc)})")
        return None
    mode = _fake_mode(inputs)
    try:
        return _propagate(gm, _fakeify(mode, inputs), mode)
    except Exception as exc:  # noqa: BLE001
        fake_error = _short(exc)
    if any(isinstance(v, FakeTensor) for v in inputs):
        notes.append(f"fx shape propagation on fake tensors failed ({fake_error})")
        flags["retry_real"] = True
        return None
    try:
        capture = _propagate(gm, list(inputs), None)
    except Exception as exc:  # noqa: BLE001
        notes.append(f"fx shape propagation failed ({_short(exc)})")
        return None
    capture.notes.append(f"shapes propagated on real tensors (fake run failed: {fake_error})")
    return capture


# ---------------------------------------------------------------- torch.export


def _capture_export(module: nn.Module, inputs: Sequence[Any], notes: list[str]) -> Capture | None:
    try:
        program = torch.export.export(module, tuple(inputs))
    except Exception as exc:  # noqa: BLE001
        notes.append(f"torch.export failed ({_short(exc)})")
        return None
    try:
        return _export_ops(program)
    except Exception as exc:  # noqa: BLE001 - an IR we do not understand: report, do not crash
        notes.append(f"reading the exported program failed ({_short(exc)})")
        return None


def _export_ops(program: torch.export.ExportedProgram) -> Capture:
    signature = program.graph_signature
    state = {
        **signature.inputs_to_parameters,
        **signature.inputs_to_buffers,
        **signature.inputs_to_lifted_tensor_constants,
    }
    buffers = set(signature.inputs_to_buffers)

    def name_of(node: Any) -> str | None:
        return state.get(node.name, node.name) if isinstance(node, fx.Node) else None

    def value_of(node: fx.Node) -> Any:
        return node.meta.get("val")

    ops: list[OpNode] = []
    output_node = None
    for node in program.graph_module.graph.nodes:
        if node.op == "output":
            output_node = node
        if node.op != "call_function":
            continue
        target = _qualified(node.target)
        key = op_key(target)
        first = node.args[0] if node.args else None
        if key.startswith("assert") or (
            target.endswith("_") and isinstance(first, fx.Node) and first.name in buffers
        ):
            continue  # runtime guards and running-statistics updates are not the computation
        if key == "getitem" and isinstance(first, fx.Node):
            key = getitem_key(value_of(first))
        names, operands = operands_of((node.args, node.kwargs), value_of, name_of)
        concrete = fx.node.map_arg(node.args, value_of)
        op = build_op(
            name=node.name, target=target, key=key, inputs=names, operands=operands,
            result=node.meta.get("val"),
            args=static_args(node.target, concrete, fx.node.map_arg(node.kwargs, value_of)),
        )
        if op is not None:
            ops.append(op)
    user_outputs = [
        i for i, spec in enumerate(signature.output_specs) if spec.kind.name == "USER_OUTPUT"
    ]
    values = [value_of(output_node.args[0][i]) for i in user_outputs] if output_node else []
    return Capture(method="export", ops=ops, outputs=output_specs(values))


# ---------------------------------------------------------------- entry point


def _eager_outputs(
    module: nn.Module, inputs: Sequence[Any], notes: list[str], flags: dict[str, bool]
) -> Capture:
    """Nothing traced: still learn the outputs by running the module (fake first)."""
    mode = _fake_mode(inputs)
    try:
        with _running(mode):
            return Capture(method="none", outputs=output_specs(module(*_fakeify(mode, inputs))))
    except Exception as exc:  # noqa: BLE001
        fake_error = _short(exc)
    if any(isinstance(v, FakeTensor) for v in inputs):
        flags["retry_real"] = True
    else:
        try:
            with _running(None):
                return Capture(method="none", outputs=output_specs(module(*inputs)))
        except Exception as exc:  # noqa: BLE001
            fake_error = _short(exc)
    notes.append(f"running the module to learn its outputs failed ({fake_error})")
    return Capture(method="none", outputs_known=False)


@contextlib.contextmanager
def _buffers_preserved(module: nn.Module) -> Iterator[None]:
    """Running the forward updates buffers (BatchNorm statistics); analysis must not."""
    saved = [(buffer, buffer.detach().clone()) for buffer in module.buffers()]
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, value in saved:
                buffer.copy_(value)


def capture(module: nn.Module, inputs: Sequence[Any], *, stop_for_real: bool = False) -> Capture:
    """Trace ``module`` on ``inputs`` (real or fake tensors, and Python scalars). Never raises.

    ``stop_for_real``: the caller will retry with real tensors, so stop as soon as a step fails
    only because the inputs are fake (export and eager would fail the same way).
    """
    try:
        with _buffers_preserved(module):
            return _capture(module, inputs, stop_for_real)
    except Exception as exc:  # noqa: BLE001 - a bug here must not stop an optimisation run
        log.warning("analysis.capture_failed", error=repr(exc))
        note = f"analysis error ({_short(exc)})"
        return Capture(method="none", outputs_known=False, notes=[note])


def _capture(module: nn.Module, inputs: Sequence[Any], stop_for_real: bool) -> Capture:
    notes: list[str] = []
    flags = {"retry_real": False}
    result = _capture_fx(module, inputs, notes, flags)
    if result is None and flags["retry_real"] and stop_for_real:
        return Capture(method="none", outputs_known=False, notes=notes, retry_real=True)
    result = result or _capture_export(module, inputs, notes)
    if result is None:
        result = _eager_outputs(module, inputs, notes, flags)
        notes.append("no op graph could be captured: op classes, FLOPs and fusion are unknown")
    result.notes = notes + result.notes
    result.retry_real = flags["retry_real"]
    log.debug("analysis.capture", method=result.method, ops=len(result.ops), notes=result.notes)
    return result
