"""Where a program's buffers live: every buffer's layout, and the stores a kernel can write straight
into a module buffer the forward mutates (instead of a fresh allocation copied back)."""

from __future__ import annotations

from agents.expert.ir.nodes import ExternNode, Layout
from agents.expert.kernel import ExternStep, Kernel, Program


def layouts_of(program: Program) -> dict[str, Layout]:
    out: dict[str, Layout] = {}
    for node in program.graph.nodes.values():
        out[node.name] = node.layout
        if isinstance(node, ExternNode):
            for k, lay in enumerate(node.extra, 1):
                out[f"{node.name}_{k}"] = lay
    return out


def inplace_targets(program: Program, layouts: dict[str, Layout]) -> dict[str, str]:
    """Buffer mutations a kernel can write straight into the module buffer: stored value buffer ->
    input name. Safe when nothing after that kernel reads the old value and the kernel itself
    reads it only at the element it overwrites."""
    from agents.expert.ir.expr import Load, walk

    out: dict[str, str] = {}
    inputs = {n.target: n for n in program.graph.inputs()}
    for fqn, view in program.graph.mutations.items():
        target = inputs.get(fqn)
        pos = next((i for i, s in enumerate(program.steps) if isinstance(s, Kernel)
                    and any(st.buffer == view.buffer for st in s.stores)), None)
        if target is None or pos is None or view.layout != layouts[view.buffer] or view.layout != target.layout:
            continue
        kernel = program.steps[pos]
        assert isinstance(kernel, Kernel)
        later = program.steps[pos + 1:]
        if any(isinstance(s, Kernel) and target.name in s.reads for s in later) or any(
                isinstance(s, ExternStep) and target.name in str(s.node.args) for s in later):
            continue
        store = next(st for st in kernel.stores if st.buffer == view.buffer)
        exprs = [st.value for st in kernel.stores] + [r.body for r in kernel.reductions]
        if all(ld.index == store.index for e in exprs for ld in walk(e) if isinstance(ld, Load)
               and ld.buffer == target.name) and sum(st.buffer == view.buffer for st in kernel.stores) == 1:
            out[view.buffer] = target.name
    return out
