"""The kernel templates: one contract, one jinja2 file of real Triton source per kernel family.

Every template implements :class:`Template`: ``name``, ``applies(kernel)`` (None, or why not),
``tuning_space(kernel)``, ``default_config(kernel, device)`` and ``render(kernel, config, ctx)``
returning a :class:`KernelSource` (the ``@triton.jit`` kernel(s) and their launcher). ``device``
is a :class:`~agents.expert.target.Target` (device kind, SM count, the packs' constants) or a bare
``"cpu"``/``"cuda"`` (the built-in defaults: ``as_target``); ``ctx.target`` is the same for render. The
``*.py.j2`` files beside this module are the kernels with holes; the body the codegen emits from
the IR (loads with masks, the computation, stores) fills them. :data:`TEMPLATES` is a fixed list:
a template that fails to import or render is an error (a test failure), never skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import jinja2

from agents.expert.ir.expr import IndexValue, Load, walk
from agents.expert.ir.index import Affine, DivMod
from agents.expert.ir.nodes import Layout
from agents.expert.kernel import Kernel
from agents.expert.target import DIRECT_LAUNCH, Target, as_target
from agents.expert.templates.launch import check_direct_calls, grid3, positional

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(Path(__file__).parent)),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=False,
    autoescape=False,
)


def render_file(name: str, **values: Any) -> str:
    """Render a template file; a launcher ``L``'s direct launches are checked against the
    rendered kernels' signatures, and re-rendered without the ones that do not match."""
    text = _ENV.get_template(name).render(**values).rstrip() + "\n"
    launcher = values.get("L")
    if isinstance(launcher, dict) and check_direct_calls(text, launcher.get("calls", [])):
        text = _ENV.get_template(name).render(**values).rstrip() + "\n"
    return text


@dataclass
class RenderContext:
    """What a template needs beyond the kernel: every buffer's layout, and where a stored buffer
    must be written instead of a fresh allocation (a module buffer the forward mutates)."""

    layouts: dict[str, Layout]
    inplace: dict[str, str] = field(default_factory=dict)  # buffer -> launcher parameter it writes into
    target: Target = field(default_factory=lambda: as_target("cuda"))
    precision: str | None = None  # fp32 matmuls: "ieee" | "tf32x3" | "tf32" | "fma" (matrix-vector, no dot)
    # the config keys the caller set (a tuning move, a remembered or forced config), as against the
    # template's defaults: a value set equal to a default is still a choice the render must keep
    given: frozenset[str] = frozenset()

    @property
    def device(self) -> str:
        return self.target.kind


@dataclass
class KernelSource:
    name: str
    launcher: str
    source: str
    inputs: list[str]  # the launcher's parameters: buffers it reads (and tensors it writes into)
    outputs: list[str]  # buffers it returns, in order
    launches: int
    structure: str
    config: dict[str, Any]
    principle_ids: list[str] = field(default_factory=list)


class Template(Protocol):
    name: str
    principle_ids: list[str]

    def applies(self, kernel: Kernel) -> str | None: ...

    def tuning_space(self, kernel: Kernel) -> dict[str, list[Any]]: ...

    def default_config(self, kernel: Kernel, device: str | Target) -> dict[str, Any]: ...

    def render(self, kernel: Kernel, config: dict[str, Any], ctx: RenderContext) -> KernelSource: ...


def describe(kernel: Kernel) -> str:
    names = [n.name for n in kernel.nodes]
    text = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    return f"{kernel.kind}: {text}"


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class Launch:
    """One ``kernel[grid](*args, **meta)`` of a launcher; ``direct``: relaunch the compiled kernel
    from its launch state after the first call (:mod:`agents.expert.templates.launch`)."""

    kernel: str
    grid: str
    args: list[str]
    meta: list[str]
    direct: bool = True
    state: str = ""  # the launch state's module-level name (set by launcher_spec)

    @property
    def grid3(self) -> str | None:
        return grid3(self.grid)

    @property
    def positional(self) -> list[str]:
        return positional(self.args, self.meta)


def ptx_flag(first_arg: str) -> str:
    """The launch keyword of a kernel whose body calls inline PTX: an NVIDIA GPU, not the interpreter
    and not ROCm (whose devices are "cuda" too)."""
    return f'PTX={first_arg}.device.type == "cuda" and torch.version.hip is None'


def launcher_spec(kernel: Kernel, ctx: RenderContext, calls: list[Launch], doc: str,
                  extra_params: list[str] | None = None) -> tuple[dict[str, Any], list[str], list[str]]:
    """The launcher's parameters, allocations and return value for ``kernel``'s stores."""
    params = [r for r in sorted(kernel.reads)]
    outputs: list[str] = []
    allocs = []
    for s in kernel.stores:
        if s.buffer in outputs:
            continue
        if s.buffer in ctx.inplace:
            target = ctx.inplace[s.buffer]
            if target not in params:
                params.append(target)
            continue
        outputs.append(s.buffer)
        lay = ctx.layouts[s.buffer]
        allocs.append({"var": s.buffer, "shape": tuple(lay.shape), "stride": tuple(lay.stride), "dtype": lay.dtype})
    params += extra_params or []
    device = f"{params[0]}.device" if params else "_device"
    if not params:
        params = ["_device"]
    returns = ", ".join(outputs) + ("," if len(outputs) == 1 else "") if outputs else "None"
    name = f"{kernel.name}_launch"
    direct = bool(ctx.target.const(DIRECT_LAUNCH)) and bool(params) and params != ["_device"]
    for i, call in enumerate(calls):
        call.direct = call.direct and direct and call.grid3 is not None
        call.state = f"{name}_k{i}"
    spec = {"name": name, "params": params, "doc": doc, "allocs": allocs, "calls": calls,
            "device": device, "returns": f"({returns})" if outputs else "None"}
    return spec, params, outputs


def pointer_params(kernel: Kernel, ctx: RenderContext) -> dict[str, str]:
    """Buffer -> kernel pointer parameter (in-place stores write through the target's pointer)."""
    out = {b: f"{b}_ptr" for b in sorted(kernel.reads)}
    for s in kernel.stores:
        target = ctx.inplace.get(s.buffer, s.buffer)
        out[s.buffer] = f"{target}_ptr"
    return out


def idx64(kernel: Kernel, ctx: RenderContext) -> bool:
    """int64 index math only where a value it computes can reach 2**31: a buffer this kernel touches
    with 2**31 elements or more, a loop extent, or (reductions and pointwise kernels, whose index
    expressions are all loads, stores and positions) any partial sum of an index expression.

    The iteration space alone does not decide: a pooling window re-reads its input, so outputs x
    window can pass 2**31 while every address stays far below (L1 #43, MaxPool3d: 122 M outputs x
    27, a 1 G-element input), and int64 division, which index digits need, is emulated on the GPU.
    Other kernels (scan, matmul, scatter) keep the iteration-space rule."""
    names = set(kernel.reads) | {s.buffer for s in kernel.stores}
    big = max((ctx.layouts[n].extent() for n in names if n in ctx.layouts), default=0)
    if big >= 2**31 or kernel.xnumel >= 2**31 or kernel.rnumel >= 2**31:
        return True
    if kernel.kind not in ("reduction", "pointwise") or kernel.parts:
        return kernel.xnumel * kernel.rnumel >= 2**31
    roots = [e for r in kernel.reductions for e in (r.body, r.mask) if e is not None]
    roots += [s.value for s in kernel.stores]
    indices = [s.index for s in kernel.stores]
    indices += [e.index for root in roots for e in walk(root) if isinstance(e, (Load, IndexValue))]
    return not all(_fits_int32(i) for i in indices)


def _fits_int32(index: Affine) -> bool:
    """Every partial sum of ``index``'s terms, in any order, stays inside int32 (digits' bases too)."""
    pos, neg = max(0, index.const), min(0, index.const)
    for atom, c in index.terms:
        lo, hi = atom.bounds()
        a, b = sorted((c * lo, c * hi))
        pos, neg = pos + max(0, b), neg + min(0, a)
        if isinstance(atom, DivMod) and not _fits_int32(atom.base):
            return False
    return pos < 2**31 and neg > -(2**31)


def all_templates() -> list[Template]:
    from agents.expert.templates.matmul import MatmulTemplate
    from agents.expert.templates.pointwise import PointwiseTemplate
    from agents.expert.templates.reduction import ReductionTemplate
    from agents.expert.templates.scan import ScanTemplate
    from agents.expert.templates.scatter import ScatterTemplate

    return [PointwiseTemplate(), ReductionTemplate(), ScanTemplate(), MatmulTemplate(), ScatterTemplate()]


def template_for(kernel: Kernel) -> Template:
    reasons = []
    for t in all_templates():
        why = t.applies(kernel)
        if why is None:
            return t
        reasons.append(f"{t.name}: {why}")
    raise ValueError(f"no template for kernel {kernel.name} ({kernel.kind}): " + "; ".join(reasons))
