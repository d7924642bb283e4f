"""Template: a scatter (functionalised ``x[idx] = v``), rendered from ``pointwise.py.j2``.

``index_put`` is lowered to a copy of its base (a pointwise node: it fuses with whatever computes
the base) and this kernel, which walks the indexed view's elements and stores each value at the
address its index tensors give (wrapped like torch's negative indices). The copy dominates the
bytes; the scatter touches only the written elements. Duplicate destinations are written by
whichever program stores last, as in torch on a GPU.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from agents.expert.ir.expr import substitute
from agents.expert.ir.index import Affine, Var, unravel
from agents.expert.target import Target, as_target
from agents.expert.kernel import Kernel
from agents.expert.templates import (
    KernelSource,
    Launch,
    RenderContext,
    cdiv,
    describe,
    idx64,
    launcher_spec,
    next_pow2,
    pointer_params,
    render_file,
)
from agents.expert.writer import Writer


def scatter_body(kernel: Kernel, ctx: RenderContext, block: int, ptrs: dict[str, str],
                 prefix: str = "") -> tuple[list[str], bool]:
    """Store each value of the indexed view at its computed address in the target's storage."""
    target, index, value, node = kernel.scatter
    numel = math.prod(node.domain)
    env = dict(zip(node.vars, unravel(Affine.of(Var("xindex", numel)), list(node.domain))))
    ptrs[target] = f"{ctx.inplace.get(target, target)}_ptr"
    xmask = numel % block != 0
    w = Writer(ptrs, {"xindex": "xindex"}, {"x": "xmask"} if xmask else {}, {"xindex": "x"}, idx64(kernel, ctx),
               prefix=prefix, cpu=ctx.target.cpu)
    v = w.value(substitute(value, env))
    dest = index.subs(env, lambda e: substitute(e, env))
    w.store(target, dest, v, ctx.layouts[target].dtype, frozenset({"x"}))
    return w.lines, xmask


class ScatterTemplate:
    name = "scatter"
    principle_ids: ClassVar[list[str]] = ["memory/int64-offsets"]

    def applies(self, kernel: Kernel) -> str | None:
        return None if kernel.kind == "scatter" and kernel.scatter is not None else f"a {kernel.kind} kernel"

    def tuning_space(self, kernel: Kernel) -> dict[str, list[Any]]:
        return {"XBLOCK": [256, 512, 1024, 2048], "num_warps": [2, 4, 8]}

    def default_config(self, kernel: Kernel, device: str | Target) -> dict[str, Any]:
        n = kernel.xnumel
        if as_target(device).cpu:
            return {"XBLOCK": min(8192, max(16, next_pow2(n))), "num_warps": 4}
        return {"XBLOCK": 256 if n < 1 << 16 else 1024, "num_warps": 4}

    def render(self, kernel: Kernel, config: dict[str, Any], ctx: RenderContext) -> KernelSource:
        cfg = {**self.default_config(kernel, ctx.target), **config}
        block = int(cfg["XBLOCK"])
        ptrs = pointer_params(kernel, ctx)
        body, xmask = scatter_body(kernel, ctx, block, ptrs)
        numel = math.prod(kernel.scatter[3].domain)
        params = list(dict.fromkeys(ptrs.values()))
        doc = describe(kernel)
        call = Launch(kernel.name, f"({cdiv(numel, block)},)", [p.removesuffix("_ptr") for p in params],
                      [f"XBLOCK={block}", f"num_warps={int(cfg['num_warps'])}"])
        spec, inputs, outputs = launcher_spec(kernel, ctx, [call], doc)
        k = {"name": kernel.name, "params": params, "doc": doc, "xnumel": numel, "xmask": xmask,
             "cast64": ".to(tl.int64)" if idx64(kernel, ctx) else "", "body": body, "combo": False}
        source = render_file("pointwise.py.j2", k=k, L=spec)
        return KernelSource(kernel.name, spec["name"], source, inputs, outputs, 1,
                            f"scatter of {numel} elements into {kernel.scatter[0]} through index tensors",
                            {"XBLOCK": block, "num_warps": int(cfg["num_warps"])}, list(self.principle_ids))
