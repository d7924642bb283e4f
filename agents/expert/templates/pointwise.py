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
from agents.expert.ir.expr import Load, substitute, walk
from agents.expert.ir.index import Affine, DivMod, Var
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
from agents.expert.writer import Writer, windowed_buffers


def pointwise_body(kernel: Kernel, ctx: RenderContext, block: int, ptrs: dict[str, str],
                   evict: dict[str, str] | None = None, prefix: str = "", tile: dict[str, Any] | None = None,
                   ) -> tuple[list[str], bool]:
    """The stores of a pointwise kernel over ``xindex``, or over a ``tile`` (:func:`_tile`) of it
    (lines, and whether ``xmask`` is used). Combo parts get a ``prefix`` each: Triton merges
    same-named values across ``if`` branches, which must then have one type."""
    if kernel.kind == "scatter":
        return scatter_body(kernel, ctx, block, ptrs, prefix)
    xmask = kernel.xnumel % block != 0 if tile is None else tile["masked"]
    names, stores = {"xindex": "xindex"}, [(s.buffer, s.index, s.value, s.dtype) for s in kernel.stores]
    if tile is not None:
        # xindex = yindex * inner + xinner, substituted into every index so the digits simplify to
        # plain yindex/xinner arithmetic, whose contiguity along each tile axis Triton can see
        flat = next(a for s in kernel.stores for a in s.index.vars() if a.name == "xindex")
        env = {flat: Affine.of(Var("yindex", tile["outer"])) * tile["inner"] + Var("xinner", tile["inner"])}
        stores = [(b, i.subs(env), substitute(v, env), d) for b, i, v, d in stores]
        names = {"yindex": "yindex", "xinner": "xinner"}
    w = Writer(ptrs, names, {"x": "xmask"} if xmask else {}, {n: "x" for n in names}, idx64(kernel, ctx),
               evict=evict, numel=kernel.xnumel, prefix=prefix, cpu=ctx.target.cpu)
    w.reread = windowed_buffers(s.value for s in kernel.stores)
    for buffer, index, value, dtype in stores:
        w.store(buffer, index, w.value(value), dtype, frozenset({"x"}))
    return w.lines, xmask


def _accesses(kernel: Kernel, stores_only: bool = False) -> list[Affine]:
    """The index of every store of a flat pointwise kernel, and of every load its values read."""
    loads = [] if stores_only else [ld.index for s in kernel.stores for ld in walk(s.value) if isinstance(ld, Load)]
    return [s.index for s in kernel.stores] + loads


def _flat_digit(atom: Any) -> DivMod | None:
    """``atom`` as a digit of one bare index variable (``(x // div) % mod``), else None."""
    if isinstance(atom, DivMod) and atom.base.const == 0 and len(atom.base.terms) == 1 \
            and atom.base.terms[0][1] == 1 and isinstance(atom.base.terms[0][0], Var):
        return atom
    return None


def transposed_place(kernel: Kernel, stores_only: bool = False) -> int | None:
    """Where a flat 1-D block cannot coalesce: the place value ``d`` of the digit of ``xindex``
    that some load or store of the kernel walks with stride 1, when ``d > 1`` (an NHWC load in a
    kernel writing NCHW: the channel digit, ``d = H*W``; an NCHW -> NHWC transpose: ``d = C``).
    Consecutive lanes of a flat block then touch addresses ``d``-apart elements in that tensor.
    None when every access is contiguous in ``xindex`` (or the digit does not tile ``xnumel``).
    ``stores_only``: the same question of the kernel's stores alone."""
    if kernel.kind != "pointwise" or kernel.parts:
        return None
    places = []
    for index in _accesses(kernel, stores_only):
        for atom, coeff in index.terms:
            digit = _flat_digit(atom)
            if not (abs(coeff) == 1 and digit is not None and digit.div > 1 and kernel.xnumel % digit.div == 0):
                continue
            digits = digit.mod if digit.mod is not None else kernel.xnumel // digit.div  # None: the top digit
            if digits >= 4:  # fewer than 4 elements of a row per sector: a tile buys little
                places.append((digits, digit.div))
    return max(places)[1] if places else None


def flat_lane_stride(kernel: Kernel) -> int:
    """How far apart (elements) neighbouring lanes of a flat block read or write: the largest
    coefficient of ``xindex``'s lowest digit (``xindex`` itself or ``xindex % m``) over the kernel's
    accesses. 1 is coalesced; 8 or more puts each lane of a 4-byte access in a sector of its own (an
    NCHW -> NHWC copy read flat: the channel digit, ``H * W`` apart)."""
    if kernel.kind != "pointwise" or kernel.parts:
        return 1
    widest = 1
    for index in _accesses(kernel):
        for atom, coeff in index.terms:
            digit = _flat_digit(atom)
            flat = atom if isinstance(atom, Var) else digit.base.terms[0][0] if digit and digit.div == 1 else None
            if isinstance(flat, Var) and flat.name == "xindex":
                widest = max(widest, abs(coeff))
    return widest


def _tile(kernel: Kernel, cfg: dict[str, Any]) -> dict[str, int] | None:
    """A tiled kernel's geometry (``YBLOCK > 1`` and a transposed access), else None."""
    place = transposed_place(kernel)
    yblock = int(cfg.get("YBLOCK", 1))
    if place is None or yblock <= 1:
        return None
    xblock = int(cfg["XBLOCK"])
    outer = kernel.xnumel // place
    xtiles = cdiv(place, xblock)
    return {"inner": place, "outer": outer, "xtiles": xtiles, "programs": xtiles * cdiv(outer, yblock),
            "masked": place % xblock != 0 or outer % yblock != 0}


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
        if transposed_place(kernel) is not None:  # a tile: XBLOCK along the store, YBLOCK along the transposed digit
            return {"XBLOCK": [32, 64, 128], "YBLOCK": [16, 32, 64], "num_warps": [4, 8],
                    "EVICT_STREAM": ["", "evict_first"], "EVICT_REUSE": ["", "evict_last"]}
        return {"XBLOCK": [256, 512, 1024, 2048, 4096], "num_warps": [2, 4, 8],
                "EVICT_STREAM": ["", "evict_first"], "EVICT_REUSE": ["", "evict_last"]}

    def default_config(self, kernel: Kernel, device: str | Target) -> dict[str, Any]:
        target = as_target(device)
        n = max([p.xnumel for p in kernel.parts] or [kernel.xnumel])
        if target.cpu:  # the interpreter pays per program: few, large blocks
            return {"XBLOCK": min(8192, max(16, next_pow2(n))), "num_warps": 4, "EVICT_STREAM": "", "EVICT_REUSE": ""}
        place = transposed_place(kernel)
        if place is not None:
            # Inductor's tile for a transposing pointwise kernel: up to 64 along the contiguous side,
            # at least 32 along the transposed digit (~1K elements a program), so every 32-byte
            # sector a tile touches is used whole on both sides
            xb = min(64, next_pow2(place))
            return {"XBLOCK": xb, "YBLOCK": max(32, 1024 // xb), "num_warps": 4,
                    "EVICT_STREAM": "evict_first" if kernel.xnumel >= 1 << 24 else "", "EVICT_REUSE": ""}
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
                             "cast64": ".to(tl.int64)" if wide else "", "tile": None}
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
            tile = _tile(kernel, cfg)
            k["tile"] = tile
            k["body"], k["xmask"] = pointwise_body(kernel, ctx, block, ptrs, evict, tile=tile)
            programs = tile["programs"] if tile else cdiv(kernel.xnumel, block)
        params = list(dict.fromkeys(ptrs.values()))
        k["params"] = params
        yblock = [f"YBLOCK={int(cfg['YBLOCK'])}"] if k["tile"] else []
        call = Launch(kernel.name, f"({programs},)", [p.removesuffix("_ptr") for p in params],
                      [f"XBLOCK={block}", *yblock, f"num_warps={int(cfg['num_warps'])}"])
        spec, inputs, outputs = launcher_spec(kernel, ctx, [call], doc)
        source = render_file("pointwise.py.j2", k=k, L=spec)
        what = (f"{len(kernel.parts)} independent pointwise kernels in one launch" if kernel.parts else
                f"pointwise kernel over {kernel.xnumel} elements writing {len(kernel.stores)} output(s)")
        used = {"XBLOCK": block, "num_warps": int(cfg["num_warps"]), "EVICT_STREAM": evict["stream"],
                "EVICT_REUSE": evict["reuse"]}
        if k["tile"]:
            used["YBLOCK"] = int(cfg["YBLOCK"])
            what += f", tiled {int(cfg['YBLOCK'])} x {block} over a transposed access"
        pids = list(self.principle_ids) + (["memory/eviction-hints"] if any(evict.values()) else [])
        pids += ["memory/transpose-via-tiles"] if k["tile"] else []
        pids += ["parallel-mapping/fewer-launches-when-latency-bound"] if kernel.parts else []
        if not ctx.target.cpu and block == self.default_config(kernel, ctx.target)["XBLOCK"]:  # the constant's block
            pids += ctx.target.credit(POINTWISE_PROGRAMS_PER_SM)
        return KernelSource(kernel.name, spec["name"], source, inputs, outputs, 1, what, used, pids)
