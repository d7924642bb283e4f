"""One capture pipeline: torch.export (non-strict) -> decomposition -> exact normal forms.

Both entry points end here: :func:`egg.capture.capture_problem` exports the problem's ``Model``,
:func:`egg.capture.capture_graph` exports the graph a Dynamo backend received. torch.export
traces with fake tensors whatever it is given, so no forward ever runs on real data, and it
functionalises the program: buffer mutations become extra outputs that ``CapturedGraph.mutations``
names.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog
import torch
from torch import fx, nn
from torch._subclasses.fake_tensor import FakeTensor
from torch.export.graph_signature import ConstantArgument, InputKind, OutputKind
from torch.utils._pytree import keystr, tree_flatten_with_path

from egg.capture.decompose import decompose
from egg.capture.model import CapturedGraph, CaptureError, CaptureMethod, GraphInput, op_name
from egg.capture.model import InputKind as Kind
from egg.capture.normalize import normalize
from egg.capture.opset import is_canonical

log = structlog.get_logger(__name__)
# torch.export, FakeTensorMode and fx's patcher keep process-global state (the dispatch-mode stack,
# ``CURRENT_PATCHER``): two captures in two threads (a suite's problems, the analysis report beside
# the expert agents) corrupt each other ("Trying to pop empty mode stack"; KernelBench level 1 #34
# was declined that way on the H200, 2026-12-02). Every capture holds this lock: one at a time.
CAPTURE_LOCK = threading.RLock()

_KINDS: dict[InputKind, Kind] = {
    InputKind.PARAMETER: "parameter",
    InputKind.BUFFER: "buffer",
    InputKind.CONSTANT_TENSOR: "constant",
    InputKind.USER_INPUT: "user_input",
}
_DATA_DEPENDENT = (
    "GuardOnDataDependentSymNode",
    "DataDependentOutputException",
    "DynamicOutputShapeException",
)
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return seen


def _user_frame(exc: BaseException) -> str | None:
    """``file.py:12 (code)`` of the deepest frame outside torch, transformers excepted."""
    found = None
    for error in _chain(exc):
        for frame in traceback.extract_tb(error.__traceback__):
            path = str(Path(frame.filename).resolve()) if frame.filename else ""
            if path.startswith(_TORCH_DIR) or "/egg/capture/" in path or frame.filename.startswith("<"):
                continue
            found = f"{Path(frame.filename).name}:{frame.lineno} `{(frame.line or '').strip()[:80]}`"
    return found


def first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).strip().split("\n")[0].split()) if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:240]}" if text else type(exc).__name__


def failure_reason(exc: BaseException, what: str) -> str:
    """One line saying why ``what`` could not be captured, pointing at the user's code."""
    where = _user_frame(exc)
    at = f" at {where}" if where else ""
    names = {type(e).__name__ for e in _chain(exc)}
    messages = " ".join(str(e) for e in _chain(exc))
    if names & set(_DATA_DEPENDENT) or "data-dependent" in messages or "data dependent" in messages:
        kind = next((n for n in _DATA_DEPENDENT if n in names), type(exc).__name__)
        return (
            f"{what} depends on tensor values{at}: data-dependent control flow cannot be captured "
            f"as one graph ({kind})"
        )
    return f"torch.export could not trace {what}{at}: {first_line(exc)}"


def export_program(module: nn.Module, args: Sequence[Any], what: str) -> torch.export.ExportedProgram:
    """``torch.export.export(module, args, strict=False)``; failures become a CaptureError.

    On failure torch.export prints the partial graph to stderr; that printout is dropped (the
    CaptureError says what failed), anything else written meanwhile is passed on.
    """
    shapes_log = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    level = shapes_log.level
    shapes_log.setLevel(logging.ERROR)  # its warnings repeat what the CaptureError says
    printed = io.StringIO()
    failure: BaseException | None = None
    try:
        with contextlib.redirect_stderr(printed):
            return torch.export.export(module, tuple(args), strict=False)
    except Exception as exc:  # noqa: BLE001 - any tracing failure is a decline with a reason
        failure = exc
        log.debug("capture.export_failed", what=what, error=first_line(exc))
        raise CaptureError(failure_reason(exc, what)) from exc
    finally:
        shapes_log.setLevel(level)
        text = printed.getvalue()
        partial = getattr(failure, "partial_fx_graph", None)
        if partial is not None:
            text = text.replace(f"{partial}\n", "")  # printed once per nested export wrapper
        if text:
            sys.stderr.write(text)


def _user_targets(args: Sequence[Any]) -> list[int | str]:
    """The target of every tensor leaf of ``args``: its position, or ``"2[0]"`` inside a list."""
    targets: list[int | str] = []
    for position, arg in enumerate(args):
        for path, _leaf in tree_flatten_with_path(arg)[0]:
            targets.append(position if not path else f"{position}{keystr(path)}")
    return targets


def _spec_of(value: torch.Tensor) -> tuple[tuple[int, ...], torch.dtype, tuple[int, ...]]:
    return tuple(int(s) for s in value.shape), value.dtype, tuple(int(s) for s in value.stride())


def _has_symbolic_size(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and any(not isinstance(s, int) for s in value.shape)


def canonical_graph(
    program: torch.export.ExportedProgram,
    args: Sequence[Any],
    *,
    method: CaptureMethod,
    notes: list[str],
    constant_buffers: frozenset[str] = frozenset(),
    input_kinds: Sequence[Kind] | None = None,
) -> CapturedGraph:
    """The canonical graph of an exported ``program`` called with ``args``.

    ``constant_buffers``: FQNs registered as buffers only for the export (plain tensor
    attributes of a fake-built model), reported as constants. ``input_kinds``: for Dynamo
    graphs, the kind of each positional input (Dynamo lifts parameters to inputs).
    """
    program = decompose(program)
    gm = program.graph_module
    signature = program.graph_signature
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    leaf_args = [leaf for arg in args for _, leaf in tree_flatten_with_path(arg)[0]]
    targets = _user_targets(args)
    inputs: list[GraphInput] = []
    scalars: list[tuple[str, int | str, Any]] = []
    user_index = 0
    for spec, node in zip(signature.input_specs, placeholders):
        if spec.kind == InputKind.USER_INPUT:
            target: int | str = targets[user_index] if user_index < len(targets) else user_index
            value = leaf_args[user_index] if user_index < len(leaf_args) else None
            kind: Kind = input_kinds[user_index] if input_kinds else "user_input"
            user_index += 1
            if isinstance(spec.arg, ConstantArgument) or not isinstance(node.meta.get("val"), torch.Tensor):
                if node.users:  # only with dynamic shapes, which the capture never asks for
                    raise CaptureError(f"the graph reads scalar input {node.name} symbolically")
                shown = spec.arg.value if isinstance(spec.arg, ConstantArgument) else value
                scalars.append((node.name, target, shown))
                gm.graph.erase_node(node)
                continue
            value = None
        elif spec.kind in _KINDS:
            kind = "constant" if spec.target in constant_buffers else _KINDS[spec.kind]
            target = spec.target or node.name
            constant = program.constants.get(spec.target) if spec.kind == InputKind.CONSTANT_TENSOR else None
            real = isinstance(constant, torch.Tensor) and not isinstance(constant, FakeTensor)
            value = constant if real else None
        else:
            raise CaptureError(f"unsupported graph input {node.name} of kind {spec.kind.name}")
        shape, dtype, stride = _spec_of(node.meta.get("val"))
        inputs.append(GraphInput(node.name, kind, target, shape, dtype, stride, value))
    if scalars:
        notes.append("scalar inputs specialised: " + ", ".join(f"{n}={v!r}" for n, _, v in scalars))
    counts = normalize(gm)
    counts.pop("assertions", None)  # guards on what the capture specialised: not a rewrite
    if counts:
        notes.append("exact rewrites: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    outside = sorted({op_name(n.target) for n in calls if not is_canonical(n.target)})
    if outside:
        notes.append("ops outside the canonical set: " + ", ".join(outside))
        log.warning("capture.non_canonical_ops", ops=outside)
    dynamic = [n.name for n in gm.graph.nodes if _has_symbolic_size(n.meta.get("val"))]
    if dynamic:
        notes.append("data-dependent sizes (known only at run time): " + ", ".join(dynamic[:8]))
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    results = list(output.args[0])
    outputs: list[Any] = []
    mutations: dict[str, str] = {}
    for spec, result in zip(signature.output_specs, results):
        if spec.kind == OutputKind.USER_OUTPUT:
            outputs.append(result)
        elif spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION):
            mutations[spec.target] = result.name if isinstance(result, fx.Node) else repr(result)
        else:
            raise CaptureError(f"unsupported graph output of kind {spec.kind.name}")
    return CapturedGraph(
        gm=gm,
        inputs=inputs,
        outputs=outputs,
        out_spec=program.call_spec.out_spec,
        mutations=mutations,
        method=method,
        notes=notes,
        scalar_inputs=scalars,
    )


def fake_attributes_to_buffers(model: nn.Module) -> frozenset[str]:
    """Register fake plain-tensor attributes as non-persistent buffers; their FQNs.

    torch.export lifts plain tensor attributes as constants, and a *fake* constant crashes the
    decomposition (a segfault in torch 2.13); as buffers they take the parameters' path. Only
    ever applied to a model the capture built itself.
    """
    moved = []
    for prefix, sub in model.named_modules():
        for name, value in list(vars(sub).items()):
            if isinstance(value, FakeTensor) and not isinstance(value, nn.Parameter):
                delattr(sub, name)
                sub.register_buffer(name, value, persistent=False)
                moved.append(f"{prefix}.{name}" if prefix else name)
    return frozenset(moved)
