"""Chained GEMMs: when a second GEMM may run on a first GEMM's output tile (the scheduler's rule, with
``schedule.Policy.chain_gemms``), and which of such a kernel's nodes are computed over its tile.

Back-to-back GEMMs, as flash attention's ``P @ V``: the second GEMM's rows are the first one's rows
(same batch, same M) and its K is the first one's N, so every K step of the second dot is already in
registers: on the one tile where a row fits one (``ROW_TILE``), or in the last of the passes over N
that a longer row takes (``schedule.Policy.row_passes``, ``templates/matmul_rows.py``); its A operand reads what the kernel computed
(``kernel.resolve`` checks it reads the lane that computed it), nothing else of the kernel, and its
output rows fit one tile. The template is ``templates/matmul_chain.py``.
"""

from __future__ import annotations

from agents.expert.ir.expr import Expr, Load, walk
from agents.expert.ir.nodes import MatmulNode, Node, ReductionNode

CHAIN_N = 256  # a chained GEMM's output rows this short fit one tile (the second accumulator's columns)
ROW_TILE = 256  # a GEMM's output rows this short fit one BLOCK_N tile; longer ones take passes over N


def _loads(e: Expr | None) -> set[str]:
    return {x.buffer for x in walk(e) if isinstance(x, Load)} if e is not None else set()


def second_gemm(nodes: list[Node]) -> MatmulNode | None:
    """The second GEMM of a chained matmul kernel's nodes (None: one GEMM)."""
    gemms = [n for n in nodes if isinstance(n, MatmulNode)]
    return gemms[1] if len(gemms) > 1 else None


def chains(nodes: list[Node], second: MatmulNode, row_max: float) -> bool:
    """Whether ``second`` can join the matmul kernel of ``nodes`` on its first GEMM's tile (rows up to
    ``row_max``: ``ROW_TILE``, or any length where rows may take passes over N). Once per kernel,
    and not on tiles the template cannot span (interleaved or padded output phases, a transposed tile)."""
    from agents.expert.templates.matmul_operands import n_period

    if second_gemm(nodes) is not None:
        return False
    first = next(n for n in nodes if isinstance(n, MatmulNode))
    inside = {n.name for n in nodes}
    return (tuple(first.batch) == tuple(second.batch) and first.m == second.m and second.k == first.n
            and first.n <= row_max and second.n <= CHAIN_N and first.out_valid is None
            and second.out_shape is None and not first.swapped and not second.swapped
            and n_period(first) == 1 and n_period(second) == 1
            and bool(_loads(second.a) & inside) and not (_loads(second.b) | _loads(second.bias)) & inside)


def passes_over_n(first: MatmulNode, node: ReductionNode) -> bool:
    """Whether a reduction of a GEMM row longer than ``ROW_TILE`` may join its kernel as passes over N
    (templates/matmul_rows.py): a plain tile (no transposed or interleaved output), a reduction a
    looped pass accumulates (no order statistic, whose bisection needs the row in registers)."""
    from agents.expert.templates.matmul_operands import n_period

    return not first.swapped and n_period(first) == 1 and node.rtype not in ("kth_largest", "kth_smallest")


def second_stage(nodes: list[Node]) -> set[str]:
    """The nodes of a chained matmul kernel computed over the second GEMM's tile: the second GEMM and
    the nodes after it that read it or another such node (the others, an output of the first GEMM's
    epilogue placed after the chain, stay on the first one's tile)."""
    second = second_gemm(nodes)
    if second is None:
        return set()
    out = {second.name}
    for n in nodes[nodes.index(second) + 1:]:
        body = getattr(n, "body", None)
        if isinstance(body, Expr) and _loads(body) & out:
            out.add(n.name)
    return out
