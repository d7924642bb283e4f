"""What a lowered graph or a scheduled program offers the designer (:func:`agents.expert.design.
analyse`): which structural variants apply, and the arithmetic some of them are offered by."""

from __future__ import annotations

from typing import Any

from agents.expert.ir import dtypes
from agents.expert.ir.nodes import ExternNode, IRGraph, MatmulNode
from agents.expert.kernel import Program


def has_matmul(graph: IRGraph) -> bool:
    return any(isinstance(n, ExternNode) and n.target.split(".")[1] in ("mm", "addmm", "bmm", "baddbmm")
               for n in graph.nodes.values())


def has_conv(graph: IRGraph) -> bool:
    return extern_convs(graph) > 0


def extern_convs(graph: IRGraph) -> int:
    """Convolutions the graph leaves to the library (cuDNN, ATen)."""
    return sum(1 for n in graph.nodes.values() if isinstance(n, ExternNode) and n.target == "aten.convolution.default")


def fp32_matmul(graph: IRGraph) -> bool:
    """A template matmul whose dots multiply fp32 values (not an fp32 product of 16-bit ones)."""
    return any(isinstance(n, MatmulNode) and n.dot_dtype == "float32" for n in graph.nodes.values())


def upcast_matmul(graph: IRGraph) -> bool:
    """A template matmul with an fp32 output whose operands are 16-bit values (lower_matmul.exact_halves)."""
    return any(isinstance(n, MatmulNode) and n.layout.dtype == "float32" and n.dot_dtype != "float32"
               for n in graph.nodes.values())


def chained_gemm(program: Program) -> bool:
    """A kernel runs a second GEMM on its first GEMM's tile (schedule.Policy.chain_gemms)."""
    return any(k.chained is not None for k in program.kernels)


def fp32_matvec(graph: IRGraph) -> bool:
    return any(isinstance(n, MatmulNode) and n.dot_dtype == "float32" and min(n.m, n.n) == 1
               for n in graph.nodes.values())


def multi_reduction(program: Program) -> bool:
    return any(k.kind == "reduction" and (len(k.reductions) > 1 or any(s.role == "full" for s in k.stores))
               for k in program.kernels)


def rounding_pass_share(graph: IRGraph) -> float:
    """What the conv-gemm variant's rounding passes over its inputs (a read and a write each) add to
    the convolutions' compulsory traffic (their inputs read once, their outputs written once): at
    level 1 #76's 8.6 GB in and 5.7 GB out, 1.2; at level 2 #71's 67 MB in and 520 MB out, 0.23."""
    rounded = [n for n in graph.nodes.values() if n.name.endswith("_x_tf32")]
    convs = [n for n in graph.nodes.values() if isinstance(n, MatmulNode) and n.aten == "aten.convolution"]

    def size(n: Any) -> int:
        return n.layout.numel * dtypes.itemsize(n.layout.dtype)

    passed = sum(2 * size(n) for n in rounded)
    own = sum(size(n) for n in [*rounded, *convs])
    return passed / own if own else 0.0


def kmajor_note(graph: IRGraph) -> str:
    copies = [n for n in graph.nodes.values() if "_kmajor" in n.name]
    return f" ({len(copies)} operand(s) copied K-major with 16-byte rows first)" if copies else ""
