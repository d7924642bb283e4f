"""Template: an inclusive scan (``scan.py.j2``): cumsum/cumprod along one dim, XBLOCK rows a program.

The scanned dim is walked in RBLOCK chunks (one chunk when it fits): ``tl.cumsum`` /
``tl.associative_scan`` inside the chunk plus the carry of the chunks before it, so every element
is read once and written once. The pointwise work before the scan (its body) and after it (full
stores reading the scanned element) is computed in the same chunk. Accumulation is fp32 (fp64
for fp64, int64 for integer sums), the result rounded to the node's dtype as torch stores it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agents.expert.ir.dtypes import TL, compute
from agents.expert.target import Target, as_target
from agents.expert.kernel import Kernel
from agents.expert.templates import (
    describe,
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


class ScanTemplate:
    name = "scan"
    principle_ids: ClassVar[list[str]] = ["algorithm-structure/scan-with-associative-scan",
                                          "algorithm-structure/fuse-reduction-with-neighbours", "tiling/fp32-accumulators"]

    def applies(self, kernel: Kernel) -> str | None:
        return None if kernel.kind == "scan" and kernel.scan is not None else f"a {kernel.kind} kernel"

    def tuning_space(self, kernel: Kernel) -> dict[str, list[Any]]:
        return {"XBLOCK": [1, 2, 4, 8, 16, 32], "RBLOCK": [64, 256, 1024, 4096], "num_warps": [2, 4, 8]}

    def default_config(self, kernel: Kernel, device: str | Target) -> dict[str, Any]:
        rp = next_pow2(kernel.rnumel)
        if as_target(device).cpu:
            rblock = min(rp, 4096)
            return {"XBLOCK": max(1, min(next_pow2(kernel.xnumel), 16384 // rblock)), "RBLOCK": rblock, "num_warps": 4}
        rblock = min(rp, 1024)
        return {"XBLOCK": max(1, min(8, 2048 // rblock, next_pow2(kernel.xnumel))), "RBLOCK": rblock, "num_warps": 4}

    def render(self, kernel: Kernel, config: dict[str, Any], ctx: RenderContext) -> KernelSource:
        cfg = {**self.default_config(kernel, ctx.target), **config}
        xblock, rblock = int(cfg["XBLOCK"]), int(cfg["RBLOCK"])
        xmask, rmask = kernel.xnumel % xblock != 0, kernel.rnumel % rblock != 0
        masks = {**({"x": "xmask"} if xmask else {}), **({"r": "rmask"} if rmask else {})}
        ptrs = pointer_params(kernel, ctx)
        wide = idx64(kernel, ctx)
        w = Writer(ptrs, {"xindex": "xindex", "rindex": "rindex"}, masks, {"xindex": "x", "rindex": "r"}, wide, cpu=ctx.target.cpu)
        name, stype, body, dtype, reverse = kernel.scan
        acc_dtype = compute(body.dtype)
        x, xr = frozenset({"x"}), frozenset({"x", "r"})
        carry = w.fresh("_carry")
        w.emit(f"{carry} = tl.full([XBLOCK, 1], {0 if stype == 'sum' else 1}, {TL[acc_dtype]})", x)
        mark = len(w.lines)
        w.begin_loop()
        v = w.value(body)
        if not w.deps(body) and not v.isidentifier():
            v = w.assign(f"tl.full([XBLOCK, RBLOCK], {v}, {TL[acc_dtype]})", xr)
        elif w.deps(body) != xr:
            v = w.assign(f"tl.broadcast_to({v}, [XBLOCK, RBLOCK])", xr)
        if rmask:
            v = w.assign(f"tl.where(rmask, {v}, {0 if stype == 'sum' else 1})", xr)
        rev = ", reverse=True" if reverse else ""
        if stype == "sum":
            scanned = w.assign(f"tl.cumsum({v}, 1{rev}) + {carry}", xr)
            w.emit(f"{carry} = {carry} + tl.sum({v}, 1)[:, None]", xr)
        else:
            chunk = w.assign(f"tl.cumprod({v}, 1{rev})", xr)
            scanned = w.assign(f"{chunk} * {carry}", xr)
            end = "0" if reverse else "RBLOCK - 1"  # the chunk's total: its last scanned column
            last = f"(tl.arange(0, RBLOCK)[None, :] == {end})"
            w.emit(f"{carry} = {carry} * tl.sum(tl.where({last}, {chunk}, 0.0), 1)[:, None]", xr)
        w.bind(name, scanned, dtype, xr)
        for s in kernel.stores:
            w.store(s.buffer, s.index, w.value(s.value), s.dtype, xr)
        loop = w.end_loop()
        before = w.take(mark)
        params = list(dict.fromkeys(ptrs.values()))
        doc = describe(kernel)
        call = Launch(kernel.name, f"({cdiv(kernel.xnumel, xblock)},)", [p.removesuffix("_ptr") for p in params],
                      [f"XBLOCK={xblock}", f"RBLOCK={rblock}", f"num_warps={int(cfg['num_warps'])}"])
        spec, inputs, outputs = launcher_spec(kernel, ctx, [call], doc)
        k = {"name": kernel.name, "params": params, "doc": doc, "xnumel": kernel.xnumel, "rnumel": kernel.rnumel,
             "xmask": xmask, "rmask": rmask, "before": w.lines + before, "loop": loop, "reverse": reverse,
             "cast64": ".to(tl.int64)" if wide else ""}
        source = render_file("scan.py.j2", k=k, L=spec)
        return KernelSource(kernel.name, spec["name"], source, inputs, outputs, 1,
                            f"{'reverse ' if reverse else ''}cum{stype} over {kernel.rnumel} x {kernel.xnumel} rows "
                            f"in chunks of {rblock}",
                            {"XBLOCK": xblock, "RBLOCK": rblock, "num_warps": int(cfg["num_warps"])},
                            list(self.principle_ids))
