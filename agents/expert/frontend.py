"""The captured graph the codegen reads (contract: ``/work/notes/frontend_contract.md`` section 1).

``capture(path, shape_set)`` returns ``egg.capture.capture_problem``'s :class:`CapturedGraph`
(canonical, functional ATen with FakeTensor metadata). Until that package lands this module
holds a *stand-in* with the same fields, built from ``torch.export`` and PyTorch's decomposition
tables; it goes when ``egg.capture`` exists (one capture in the end).
"""

from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
import torch
from torch import fx

from agents.expert.decline import ExpertDecline
from egg.problem import inspect_problem, load_problem_module

log = structlog.get_logger(__name__)

aten = torch.ops.aten


@dataclass
class GraphInput:
    name: str
    kind: str  # parameter | buffer | constant | user_input
    target: str | int
    shape: tuple[int, ...]
    dtype: torch.dtype
    stride: tuple[int, ...]
    value: Any = None


@dataclass
class CapturedGraph:
    gm: fx.GraphModule
    inputs: list[GraphInput]
    outputs: list[fx.Node]
    out_spec: Any
    mutations: dict[str, str] = field(default_factory=dict)
    method: str = "export"
    notes: list[str] = field(default_factory=list)
    source_graphs: int = 1


def _table() -> dict[Any, Any]:
    from torch._decomp import core_aten_decompositions, get_decompositions

    table = dict(core_aten_decompositions())
    table.update(get_decompositions([
        aten._softmax, aten._log_softmax, aten.native_layer_norm, aten.native_group_norm,
        aten._native_batch_norm_legit_functional, aten._native_batch_norm_legit_no_training,
        aten._native_batch_norm_legit, aten.native_batch_norm, aten.split_with_sizes, aten.split.Tensor,
        aten.nll_loss_forward, aten.unbind, aten.rms_norm, aten.linalg_vector_norm,
    ]))
    for keep in (aten.scaled_dot_product_attention.default, aten.mm.default, aten.addmm.default,
                 aten.bmm.default, aten.baddbmm.default, aten.convolution.default):
        table.pop(keep, None)
    return table


def _stand_in(path: Path, shape_set: str) -> CapturedGraph:
    from torch.export.graph_signature import InputKind, OutputKind

    info = inspect_problem(path)
    problem = load_problem_module(path, info.shape_sets.get(shape_set, {}))
    torch.manual_seed(0)
    init = problem.get_init_inputs()
    torch.manual_seed(0)
    model = problem.Model(*init)
    torch.manual_seed(0)
    # the judge hands the candidate clones (dense layouts kept, others made contiguous)
    inputs = [t.clone() if isinstance(t, torch.Tensor) else t for t in problem.get_inputs()]
    try:
        with torch.no_grad() if not model.training else contextlib.nullcontext():
            ep = torch.export.export(model, tuple(inputs), strict=False)
        ep = ep.run_decompositions(_table())
    except Exception as exc:  # noqa: BLE001 - torch.export's own reason is the decline reason
        raise ExpertDecline(f"torch.export cannot capture Model.forward ({type(exc).__name__}: "
                            f"{' '.join(str(exc).split())[:200]})") from None
    gm = ep.graph_module
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    graph_inputs: list[GraphInput] = []
    user_index = 0
    for node, spec in zip(placeholders, ep.graph_signature.input_specs):
        val = node.meta.get("val")
        if spec.kind == InputKind.USER_INPUT:
            position = user_index
            user_index += 1
            if not isinstance(val, torch.Tensor):  # a baked scalar argument
                for user in list(node.users):
                    user.replace_input_with(node, inputs[position])
                gm.graph.erase_node(node)
                continue
            graph_inputs.append(GraphInput(node.name, "user_input", position, tuple(val.shape), val.dtype,
                                           tuple(val.stride())))
            continue
        kind = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer"}.get(spec.kind, "constant")
        value = ep.constants.get(spec.target) if kind == "constant" else None
        graph_inputs.append(GraphInput(node.name, kind, str(spec.target), tuple(val.shape), val.dtype,
                                       tuple(val.stride()), value))
    output = next(n for n in gm.graph.nodes if n.op == "output")
    flat = list(output.args[0])
    outputs, mutations = [], {}
    for value, spec in zip(flat, ep.graph_signature.output_specs):
        if spec.kind == OutputKind.BUFFER_MUTATION:
            mutations[str(spec.target)] = value.name
        elif spec.kind == OutputKind.USER_OUTPUT:
            outputs.append(value)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return CapturedGraph(gm=gm, inputs=graph_inputs, outputs=outputs, out_spec=ep.call_spec.out_spec,
                         mutations=mutations, notes=["captured by the expert's torch.export stand-in"])


def capture(path: str | Path, shape_set: str = "default") -> CapturedGraph:
    """The problem's canonical graph at ``shape_set``; ExpertDecline with the reason otherwise."""
    path = Path(path)
    if importlib.util.find_spec("egg.capture") is not None:
        from egg.capture import CaptureError, capture_problem

        try:
            return capture_problem(path, shape_set=shape_set, device="cpu")  # type: ignore[no-any-return]
        except CaptureError as exc:
            raise ExpertDecline(str(exc)) from None
    log.debug("expert.capture_stand_in", problem=path.name)
    try:
        return _stand_in(path, shape_set)
    except ExpertDecline:
        raise
    except Exception as exc:  # noqa: BLE001 - the problem's own error (import, constructor)
        raise ExpertDecline(f"building the problem failed: {type(exc).__name__}: "
                            f"{' '.join(str(exc).split())[:200]}") from None
