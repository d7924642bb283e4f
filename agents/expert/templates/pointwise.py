"""Template: a pointwise kernel (``pointwise.py.j2``): a flat 1-D grid over the output elements.

Every store of the kernel (several outputs of one domain: AdamW's three results, a residual sum
and its consumers) is written from one pass over the inputs. Sizes and strides are static: the
index arithmetic is specialised to the captured shapes, so a contiguous access is ``xindex``
and a broadcast bias is ``(xindex // 16) % 8``; the mask is dropped when XBLOCK divides the size.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agents.expert.schedule import Kernel
from agents.expert.templates import (
    KernelSource,
    Launch,
    RenderContext,
    cdiv,
    idx64,
    launcher_spec,
    next_pow2,
    pointer_params,
    render_file,
)
from agents.expert.writer import Writer

SMS = 132


class PointwiseTemplate:
    name = "pointwise"
    principle_ids: ClassVar[list[str]] = [
        "algorithm-structure/fuse-elementwise-chain",
        "parallel-mapping/flat-index-for-elementwise",
        "tiling/power-of-two-blocks-with-masks",
    ]

    def applies(self, kernel: Kernel) -> str | None:
        return None if kernel.kind == "pointwise" else f"a {kernel.kind} kernel"

    def tuning_space(self, kernel: Kernel) -> dict[str, list[Any]]:
        return {"XBLOCK": [256, 512, 1024, 2048, 4096], "num_warps": [2, 4, 8]}

    def default_config(self, kernel: Kernel, device: str) -> dict[str, Any]:
        n = kernel.xnumel
        if device == "cpu":  # the interpreter pays per program: few, large blocks
            return {"XBLOCK": min(8192, max(16, next_pow2(n))), "num_warps": 4}
        block = 1024
        while block > 128 and cdiv(n, block) < 4 * SMS:
            block //= 2
        return {"XBLOCK": block, "num_warps": 4 if block <= 1024 else 8}

    def render(self, kernel: Kernel, config: dict[str, Any], ctx: RenderContext) -> KernelSource:
        cfg = {**self.default_config(kernel, ctx.device), **config}
        block = int(cfg["XBLOCK"])
        ptrs = pointer_params(kernel, ctx)
        xmask = kernel.xnumel % block != 0
        w = Writer(ptrs, {"xindex": "xindex"}, {"x": "xmask"} if xmask else {}, {"xindex": "x"}, idx64(kernel, ctx))
        for s in kernel.stores:
            w.store(s.buffer, s.index, w.value(s.value), s.dtype, frozenset({"x"}))
        params = list(dict.fromkeys(ptrs.values()))
        doc = describe(kernel)
        call = Launch(kernel.name, f"({cdiv(kernel.xnumel, block)},)", [p.removesuffix("_ptr") for p in params],
                      [f"XBLOCK={block}", f"num_warps={int(cfg['num_warps'])}"])
        spec, inputs, outputs = launcher_spec(kernel, ctx, [call], doc)
        k = {"name": kernel.name, "params": params, "doc": doc, "xnumel": kernel.xnumel, "xmask": xmask,
             "cast64": ".to(tl.int64)" if idx64(kernel, ctx) else "", "body": w.lines, "combo": False}
        source = render_file("pointwise.py.j2", k=k, L=spec)
        return KernelSource(kernel.name, spec["name"], source, inputs, outputs, 1,
                            f"pointwise kernel over {kernel.xnumel} elements writing {len(kernel.stores)} output(s)",
                            {"XBLOCK": block, "num_warps": int(cfg["num_warps"])}, list(self.principle_ids))


def describe(kernel: Kernel) -> str:
    names = [n.name for n in kernel.nodes]
    text = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    return f"{kernel.kind}: {text}"
