"""Template: a pointwise kernel (``pointwise.py.j2``): a flat 1-D grid over the output elements.

Every store of the kernel (several outputs of one domain: AdamW's three results, a residual sum
and its consumers) is written from one pass over the inputs. Sizes and strides are static: the
index arithmetic is specialised to the captured shapes, so a contiguous access is ``xindex``
and a broadcast bias is ``(xindex // 16) % 8``; the mask is dropped when XBLOCK divides the size.

A *combo* kernel is several independent pointwise (or scatter) kernels of one wave in a single
launch: each program runs the part its id falls in (rotary's q and k, two KV-cache appends), so
a small problem pays one launch's host time instead of several.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agents.expert.target import POINTWISE_PROGRAMS_PER_SM, Target, as_target
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
from agents.expert.templates.scatter import scatter_body
from agents.expert.writer import Writer


def pointwise_body(kernel: Kernel, ctx: RenderContext, block: int, ptrs: dict[str, str],
                   evict: dict[str, str] | None = None, prefix: str = "") -> tuple[list[str], bool]:
    """The stores of a pointwise kernel over ``xindex`` (lines, and whether ``xmask`` is used).
    Combo parts get a ``prefix`` each: Triton merges same-named values across ``if`` branches,
    which must then have one type."""
    if kernel.kind == "scatter":
        return scatter_body(kernel, ctx, block, ptrs, prefix)
    xmask = kernel.xnumel % block != 0
    w = Writer(ptrs, {"xindex": "xindex"}, {"x": "xmask"} if xmask else {}, {"xindex": "x"}, idx64(kernel, ctx),
               evict=evict, numel=kernel.xnumel, prefix=prefix)
    for s in kernel.stores:
        w.store(s.buffer, s.index, w.value(s.value), s.dtype, frozenset({"x"}))
    return w.lines, xmask


class PointwiseTemplate:
    name = "pointwise"
    principle_ids: ClassVar[list[str]] = [
        "algorithm-structure/fuse-elementwise-chain",
        "parallel-mapping/flat-index-for-elementwise",
        "tiling/power-of-two-blocks-with-masks",
    ]

    def applies(self, kernel: Kernel) -> str | None:
        return None if kernel.kind in ("pointwise", "combo") else f"a {kernel.kind} kernel"

    def tuning_space(self, kernel: Kernel) -> dict[str, list[Any]]:
        return {"XBLOCK": [256, 512, 1024, 2048, 4096], "num_warps": [2, 4, 8],
                "EVICT_STREAM": ["", "evict_first"], "EVICT_REUSE": ["", "evict_last"]}

    def default_config(self, kernel: Kernel, device: str | Target) -> dict[str, Any]:
        target = as_target(device)
        n = max([p.xnumel for p in kernel.parts] or [kernel.xnumel])
        if target.cpu:  # the interpreter pays per program: few, large blocks
            return {"XBLOCK": min(8192, max(16, next_pow2(n))), "num_warps": 4, "EVICT_STREAM": "", "EVICT_REUSE": ""}
        block = 1024
        while block > 128 and cdiv(kernel.xnumel, block) < target.const(POINTWISE_PROGRAMS_PER_SM) * target.sm_count:
            block //= 2
        # inputs read exactly once need not stay in L2 once the tensor outgrows it (~50 MB)
        return {"XBLOCK": block, "num_warps": 4 if block <= 1024 else 8,
                "EVICT_STREAM": "evict_first" if kernel.xnumel >= 1 << 24 else "", "EVICT_REUSE": ""}

    def render(self, kernel: Kernel, config: dict[str, Any], ctx: RenderContext) -> KernelSource:
        cfg = {**self.default_config(kernel, ctx.target), **config}
        block = int(cfg["XBLOCK"])
        evict = {"stream": cfg.get("EVICT_STREAM", ""), "reuse": cfg.get("EVICT_REUSE", "")}
        ptrs = pointer_params(kernel, ctx)
        for part in kernel.parts:
            ptrs.update(pointer_params(part, ctx))
        wide = idx64(kernel, ctx)
        doc = describe(kernel)
        k: dict[str, Any] = {"name": kernel.name, "doc": doc, "xnumel": kernel.xnumel, "combo": bool(kernel.parts),
                             "cast64": ".to(tl.int64)" if wide else ""}
        if kernel.parts:
            parts, start = [], 0
            for j, part in enumerate(kernel.parts):
                body, xmask = pointwise_body(part, ctx, block, ptrs, evict, prefix=f"p{j}_")
                end = start + cdiv(part.xnumel, block)
                parts.append({"pid_start": start, "pid_end": end, "xnumel": part.xnumel, "xmask": xmask,
                              "body": body, "doc": describe(part)})
                start = end
            k["parts"], programs = parts, start
        else:
            k["body"], k["xmask"] = pointwise_body(kernel, ctx, block, ptrs, evict)
            programs = cdiv(kernel.xnumel, block)
        params = list(dict.fromkeys(ptrs.values()))
        k["params"] = params
        call = Launch(kernel.name, f"({programs},)", [p.removesuffix("_ptr") for p in params],
                      [f"XBLOCK={block}", f"num_warps={int(cfg['num_warps'])}"])
        spec, inputs, outputs = launcher_spec(kernel, ctx, [call], doc)
        source = render_file("pointwise.py.j2", k=k, L=spec)
        what = (f"{len(kernel.parts)} independent pointwise kernels in one launch" if kernel.parts else
                f"pointwise kernel over {kernel.xnumel} elements writing {len(kernel.stores)} output(s)")
        used = {"XBLOCK": block, "num_warps": int(cfg["num_warps"]), "EVICT_STREAM": evict["stream"],
                "EVICT_REUSE": evict["reuse"]}
        pids = list(self.principle_ids) + (["memory/eviction-hints"] if any(evict.values()) else [])
        pids += ["parallel-mapping/fewer-launches-when-latency-bound"] if kernel.parts else []
        if not ctx.target.cpu and block == self.default_config(kernel, ctx.target)["XBLOCK"]:  # the constant's block
            pids += ctx.target.credit(POINTWISE_PROGRAMS_PER_SM)
        return KernelSource(kernel.name, spec["name"], source, inputs, outputs, 1, what, used, pids)
