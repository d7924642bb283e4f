"""From a problem file to candidate files: capture -> lower -> schedule -> templates -> source.

A problem gets a few structurally different *variants* (the designer offers each):

* ``fused``: matmuls/convolutions/attention stay library calls (cuBLAS, cuDNN, SDPA); everything
  around them is fused into Triton kernels;
* ``triton-matmul`` (16-bit) or ``triton-matmul-ieee`` / ``triton-matmul-3xtf32`` (fp32): every
  mm/addmm/bmm/baddbmm is the Triton matmul template, its operand producers (a transposed or
  dequantised weight) in the tile loads and its pointwise consumers in the epilogue. fp32 dots
  are exact (``ieee``) or 3xTF32 (tensor cores, error close to fp32); ``triton-matmul-halves``
  first where an fp32 product's operands are both upcast 16-bit values (``q.float() @
  k.float().mT``): it multiplies those on 16-bit tensor cores (``lower_matmul.exact_halves``);
  ``triton-matmul-chained`` beside them where a GEMM's A operand is another GEMM's row-tile
  epilogue (``softmax(q @ k.mT) @ v``): the second GEMM runs on the first one's tile
  (``templates/matmul_chain.py``), longer rows in passes over N (``templates/matmul_rows.py``:
  flash attention in one pass), fp32 dots as 3xTF32; after ``fused`` unless a pack raises its priority;
* ``conv-channels-last``: convolutions on channels-last tensors with ``bias=None`` (cuDNN's NHWC
  kernels), the input transposed by a generated kernel, the bias and everything after the
  convolution fused into a tiled kernel that writes the reference's layout (``ir/lower_conv.py``);
* ``conv-gemm``: convolutions as Triton implicit GEMMs, the input gathered in the B tile loads, the
  bias and the ops after the convolution in the GEMM's epilogue (``ir/lower_conv_gemm.py``); fp32
  ones in TF32, as cuDNN runs them under PyTorch's default flags;
* ``conv-depthwise``: depthwise convolutions as unrolled stencils in fp32, their bias and the ops
  after them in the same pointwise kernel (``ir/lower_conv_depthwise.py``);
* ``less-fused``: each reduction its own kernel and its pointwise consumers in another (the
  fallback when a big fused kernel could miss the tolerance or spill registers).

Each rendered file carries ``# EGG-EXPERT-CONFIG: {...}`` (variant, device, shape set and every
kernel's config), so a stage-2 tuner can re-render it with other parameters.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import BaseModel, Field

from agents.expert import candidate as cand
from agents.expert import graph_facts as facts
from agents.expert.buffers import inplace_targets, layouts_of
from agents.expert.decline import ExpertDecline
from agents.expert.frontend import capture
from agents.expert.helpers import helper_source
from agents.expert.ir.lower import LowerOptions, lower_graph
from agents.expert.ir.lower_conv import has_spatial_conv
from agents.expert.ir.nodes import IRGraph, Layout, MatmulNode
from agents.expert.kernel import ExternStep, Kernel, NotFusable, Program
from agents.expert.schedule import Policy, SplitRule, schedule, split_candidates
from agents.expert.target import CONV_GEMM_REGISTER_SHARE, Target, as_target
from agents.expert.templates import KernelSource, RenderContext, Template, template_for
from egg.evaluate.static_checks import check_candidate_source
from egg.problem import inspect_problem

if TYPE_CHECKING:
    from principles import Decisions

log = structlog.get_logger(__name__)

_LIBRARY = {"convolution": "cuDNN", "mm": "cuBLAS", "addmm": "cuBLAS", "bmm": "cuBLAS", "baddbmm": "cuBLAS",
            "scaled_dot_product_attention": "the fused SDPA kernels", "_scaled_dot_product_flash_attention": "flash"}
_VIEW_EXTERNS = {"view", "_unsafe_view", "as_strided", "permute", "expand", "unfold", "alias", "detach"}


class KernelChoice(BaseModel):
    kernel: str
    template: str
    config: dict[str, Any] = Field(default_factory=dict)


class ExpertConfig(BaseModel):
    """The machine-readable block in a candidate's header."""

    version: int = 2
    variant: str
    device: str
    shape_set: str = "default"  # the specialisation the kernels below (and the tuner) belong to
    kernels: list[KernelChoice]
    specialised: list[str] = Field(default_factory=list)  # every shape set the file has kernels for

    def by_kernel(self) -> dict[str, dict[str, Any]]:
        return {k.kernel: dict(k.config) for k in self.kernels}


class ExpertCandidate(BaseModel):
    """One candidate file (contract section 4)."""

    variant: str
    source: str
    kernels: int  # generated-kernel launches per forward call, as planned
    torch_ops: list[str]  # compute ops left as torch calls ("aten.mm", ...)
    structure: str
    principle_ids: list[str] = Field(default_factory=list)
    config: ExpertConfig


@dataclass
class Variant:
    id: str
    summary: str
    program: Program
    precision: str | None = None


@dataclass
class ExpertProgram:
    path: Path
    shape_set: str
    source: str
    variants: list[Variant]
    notes: list[str] = field(default_factory=list)

    def variant(self, variant_id: str) -> Variant:
        """A variant by id; ``<base>+<pack>/<template>`` is ``base`` with a user template's kernels."""
        base = variant_id.split("+", 1)[0]
        for v in self.variants:
            if v.id == base:
                return v if base == variant_id else dataclasses.replace(v, id=variant_id)
        raise ExpertDecline(f"variant {variant_id!r} does not apply to this problem any more")


def read_config(source: str) -> ExpertConfig | None:
    """The config block of an expert-generated candidate, or None (not ours, or damaged)."""
    for line in source.splitlines()[:80]:
        if line.startswith(cand.CONFIG_TAG):
            try:
                return ExpertConfig.model_validate(json.loads(line[len(cand.CONFIG_TAG):]))
            except ValueError:
                return None
    return None


def torch_ops(program: Program) -> list[str]:
    out = []
    for e in program.externs():
        packet = e.target.rpartition(".")[0] if e.target.count(".") >= 2 else e.target
        if packet.split(".")[-1] not in _VIEW_EXTERNS:
            out.append(packet)
    return list(dict.fromkeys(out))


def _signature(program: Program) -> tuple[Any, ...]:
    return tuple((k.kind, tuple(n.name for n in k.nodes)) if isinstance(k, Kernel) else ("extern", k.node.name)
                 for k in program.steps)


def analyse(path: str | Path, shape_set: str = "default", target: str | Target = "cuda") -> ExpertProgram:
    """Capture, lower and schedule the problem's variants; ExpertDecline when nothing applies.
    ``target`` decides which reductions are split (:class:`agents.expert.schedule.SplitRule`)."""
    path = Path(path)
    cg = capture(path, shape_set)
    rule = SplitRule.of(target)
    variants: list[Variant] = []
    seen: set[tuple[Any, ...]] = set()

    def add(vid: str, summary: str, program: Program, precision: str | None = None) -> None:
        sig = (_signature(program), precision)
        if program.kernels and sig not in seen:
            seen.add(sig)
            variants.append(Variant(vid, summary, program, precision))

    graph, fused = _lower_and_schedule(cg, rule, "extern")
    add("fused", "library ops stay torch calls, the ops around them are fused", fused)
    if facts.has_matmul(graph):
        mgraph, mprog = _lower_and_schedule(cg, rule, "template")
        what = "matmuls as Triton kernels with their operand prologues and epilogues fused"
        upcast, fp32_dots = facts.upcast_matmul(mgraph), facts.fp32_matmul(mgraph)
        try:
            chained: Program | None = _schedule(mgraph, Policy(chain_gemms=True, row_passes=True))
        except ExpertDecline as exc:  # the unchained programs stand; say why this one did not
            chained = None
            log.info("expert.chain_declined", problem=path.name, why=str(exc))
        if chained is not None and facts.chained_gemm(chained):  # back-to-back GEMMs, the intermediate in registers
            # fp32 dots as 3xTF32: two GEMMs' ieee tiles in one kernel spill (nanoGPT's fp32 attention at
            # 1024 tokens, H100, 2026-12-07: 3.49 ms ieee, 0.70 ms 3xTF32, torch.compile 0.99 ms)
            add("triton-matmul-chained", f"{what}; a GEMM whose A operand is another GEMM's epilogue tile "
                "(attention's P @ V) runs in that GEMM's kernel, the intermediate never written",
                chained, "tf32x3" if fp32_dots else None)
        if upcast:  # fp32 products of upcast 16-bit operands: the 16-bit values on 16-bit tensor cores first
            add("triton-matmul-halves", f"{what}; fp32 products of upcast 16-bit operands multiply the 16-bit "
                "values on 16-bit tensor cores (exact products, fp32 sums)", mprog,
                "ieee" if fp32_dots else None)
        # the fp32 dots: every fp32 product, upcast operands too (where the 16-bit dots were rejected)
        fgraph, fprog = _lower_and_schedule(cg, rule, "template", halves=False) if upcast else (mgraph, mprog)
        if facts.fp32_matmul(fgraph):
            add("triton-matmul-ieee", f"{what}; ieee fp32 dot (exact fp32)", fprog, "ieee")
            kgraph, kprog = _lower_and_schedule(cg, rule, "template", kmajor=True, halves=False)  # tensor cores read fp32 K-major
            add("triton-matmul-3xtf32", f"{what}; fp32 operands as 3xTF32 on tensor cores{facts.kmajor_note(kgraph)}",
                kprog, "tf32x3")
            if facts.fp32_matvec(fgraph):  # a matrix-vector product reads the matrix once: FMAs keep up with that
                add("triton-matmul-fma", f"{what}; matrix-vector products as fp32 FMAs and a row sum (no dot)",
                    fprog, "fma")
            if inspect_problem(path).allow_tf32:  # the problem allows TF32: the judge's tolerance is TF32's
                _, tprog = _lower_and_schedule(cg, rule, "template", tf32=True, kmajor=True, halves=False)
                add("triton-matmul-tf32", f"{what}; TF32 tensor-core dot (the problem allows TF32)", tprog, "tf32")
        elif not upcast:
            add("triton-matmul", what, mprog)
    if has_spatial_conv(graph):  # cuDNN's NHWC kernels; whether the layout change pays is measured
        _, cprog = _lower_and_schedule(cg, rule, "extern", conv="channels-last")
        add("conv-channels-last", "convolutions on channels-last tensors, bias-free, the bias and the ops after "
            "them fused into a tiled kernel writing the reference's layout", cprog)
    gemms, fp32, ggraph = [], False, graph
    if facts.has_conv(graph):  # a Triton implicit GEMM with the epilogue in registers; measured against cuDNN
        ggraph, gprog = _lower_and_schedule(cg, rule, "extern", conv="gemm", tf32=True, kmajor=True)
        gemms = [n for n in ggraph.nodes.values() if isinstance(n, MatmulNode) and n.aten == "aten.convolution"]
        fp32 = any(n.layout.dtype == "float32" for n in gemms)
        if gemms:
            add("conv-gemm", "convolutions as Triton implicit GEMMs (the input gathered in the tile loads), their "
                "bias and the ops after them in the epilogue" + (", TF32 as cuDNN under PyTorch's default" if fp32
                                                                   else ""), gprog, "tf32" if fp32 else None)
    if facts.has_conv(graph):  # depthwise convolutions as stencils, their epilogue fused (no GEMM: a few taps)
        dgraph, dprog = _lower_and_schedule(cg, rule, "extern", conv="depthwise")
        if facts.extern_convs(dgraph) < facts.extern_convs(graph):
            add("conv-depthwise", "depthwise convolutions as unrolled stencils in fp32 (each output its channel's "
                "window times its taps), their bias and the ops after them in the same kernel", dprog)
    share = float(as_target(target).const(CONV_GEMM_REGISTER_SHARE))
    if gemms and fp32 and facts.rounding_pass_share(ggraph) >= share:  # the input's rounding pass is most traffic
        _, rprog = _lower_and_schedule(cg, rule, "extern", conv="gemm-registers", tf32=True, kmajor=True)
        add("conv-gemm-registers", "convolutions as Triton implicit GEMMs computed transposed, the gathered input "
            "rounded to TF32 in registers (no rounding pass over it), their bias and the ops after them in the "
            "epilogue", rprog, "tf32")
    if facts.multi_reduction(fused):
        add("less-fused", "each reduction in its own kernel, its consumers in another", _schedule(graph, Policy(False)))
    if not variants:
        raise ExpertDecline(_decline_reason(fused))
    return ExpertProgram(path, shape_set, path.read_text(encoding="utf-8"), variants, list(cg.notes) + graph.notes)


def _lower_and_schedule(cg: Any, rule: SplitRule, matmul: str, conv: str = "nchw", tf32: bool = False,
                        kmajor: bool = False, halves: bool = True) -> tuple[IRGraph, Program]:
    """Lower and schedule; where a kernel has few long rows, lower again with its reductions split."""
    options = LowerOptions(matmul=matmul, conv=conv, tf32=tf32, kmajor=kmajor, halves=halves)
    graph = lower_graph(cg, options)
    program = _schedule(graph, Policy())
    split = split_candidates(program, rule)
    if split:
        graph = lower_graph(cg, dataclasses.replace(options, split=split))
        program = _schedule(graph, Policy())
    return graph, program


def _schedule(graph: IRGraph, policy: Policy) -> Program:
    try:
        return schedule(graph, policy)
    except NotFusable as exc:
        raise ExpertDecline(f"the scheduler could not order the kernels: {exc}") from None


def _decline_reason(program: Program) -> str:
    ops = torch_ops(program)
    if not ops:
        return "no expert template applies: the forward has no computing op (views only)"
    libs = ", ".join(dict.fromkeys(_LIBRARY.get(o.split(".")[-1], "ATen") for o in ops))
    return f"no expert template for op {', '.join(ops)} alone: {libs} already runs it; nothing to fuse"


def _tag(shape_set: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in shape_set) or "default"


def _renamed(program: Program, suffix: str) -> Program:
    """``program`` with every kernel name suffixed (another shape set's kernels beside ours)."""
    steps: list[Kernel | ExternStep] = []
    for step in program.steps:
        if isinstance(step, Kernel):
            parts = [dataclasses.replace(p, name=f"{p.name}{suffix}") for p in step.parts]
            steps.append(dataclasses.replace(step, name=f"{step.name}{suffix}", parts=parts))
        else:
            steps.append(step)
    return Program(program.graph, steps, program.stored)


Pick = Callable[[Kernel], Template]


def _kernel_sources(variant: Variant, prog: Program, target: Target, overrides: dict[str, dict[str, Any]],
                    pick: Pick | None = None,
                    ) -> tuple[dict[str, KernelSource], list[KernelChoice], dict[str, str], dict[str, Layout]]:
    layouts = layouts_of(prog)
    inplace = inplace_targets(prog, layouts)
    ctx = RenderContext(layouts, inplace, target, variant.precision)
    sources: dict[str, KernelSource] = {}
    choices: list[KernelChoice] = []
    for kernel in prog.kernels:
        template: Template = (pick or template_for)(kernel)
        given = overrides.get(kernel.name, {})
        config = {**template.default_config(kernel, target), **given}
        ks = template.render(kernel, config, dataclasses.replace(ctx, given=frozenset(given)))
        sources[kernel.name] = ks
        choices.append(KernelChoice(kernel=kernel.name, template=template.name, config=ks.config))
    return sources, choices, inplace, layouts


def rendered_configs(variant: Variant, device: str | Target, pick: Pick | None = None) -> dict[str, dict[str, Any]]:
    """Kernel name -> the config its template renders with no overrides (its defaults, with what the
    variant adds: a TF32 GEMM's tensor-core tiles, which ``default_config`` cannot see)."""
    _, choices, _, _ = _kernel_sources(variant, variant.program, as_target(device), {}, pick)
    return {c.kernel: dict(c.config) for c in choices}


def render(program: ExpertProgram, variant: Variant, device: str | Target,
           overrides: dict[str, dict[str, Any]] | None = None, siblings: list[ExpertProgram] | None = None,
           pick: Pick | None = None, principles: list[str] | None = None) -> ExpertCandidate:
    """The complete candidate file of ``variant`` with each kernel's default config, updated by
    ``overrides`` (kernel name -> {param: value}). ``siblings`` (the problem's other shape sets,
    analysed) add their own specialisation of the same variant, with default configs: the
    candidate then runs every declared shape set, each with kernels specialised to it. ``device``:
    a Target (the packs' constants, the device's SM count) or ``"cpu"``/``"cuda"`` (built-in
    defaults); ``pick``: which template renders a kernel (default: the built-in registry's);
    ``principles``: ids that decided this candidate beyond its kernels' own (a pack's switch)."""
    target = as_target(device)
    device = target.kind
    sources, choices, inplace, layouts = _kernel_sources(variant, variant.program, target, overrides or {}, pick)
    shared = cand.Shared()
    specialised = [cand.forward_lines(variant.program, sources, inplace, layouts, shared, _tag(program.shape_set))]
    every = dict(sources)
    instead: list[str] = []
    for sib in siblings or []:
        if sib.shape_set == program.shape_set:
            continue
        try:
            other = sib.variant(variant.id)
        except ExpertDecline:
            if not sib.variants:
                continue  # the expert declined that shape set: the candidate raises a clear error for it
            # The variant does not apply at that shape set as such (a bf16 Triton GEMM where that set
            # is fp32): that set runs the same family's variant there (triton-matmul-ieee), else its
            # first structure, and the candidate's structure line says so.
            base = variant.id.split("+", 1)[0]
            other = next((v for v in sib.variants if v.id.startswith(base + "-")), sib.variants[0])
            instead.append(f"{sib.shape_set}: {other.id}, as {variant.id} does not apply there")
            log.info("expert.variant_replaced", problem=program.path.name, variant=variant.id,
                     shape_set=sib.shape_set, instead=other.id)
        prog = _renamed(other.program, f"_{_tag(sib.shape_set)}")
        s_sources, _, s_inplace, s_layouts = _kernel_sources(other, prog, target, {}, pick)
        specialised.append(cand.forward_lines(prog, s_sources, s_inplace, s_layouts, shared, _tag(sib.shape_set)))
        every.update(s_sources)
    kernels_src = "\n\n".join(s.source.rstrip() for s in every.values())
    helpers = helper_source(kernels_src)
    ops = torch_ops(variant.program)
    kept = f"torch keeps {', '.join(ops)}; " if ops else ""
    structure = (kept + "; ".join(dict.fromkeys(s.structure for s in sources.values()))
                 + "".join(f" [shape set {i}]" for i in instead))[:400]
    launches = sum(s.launches for s in sources.values())
    libs = [_LIBRARY.get(o.split(".")[-1]) for o in ops]
    library = (["algorithm-structure/keep-library-gemm"] if "cuBLAS" in libs else []) + (
        ["algorithm-structure/conv-keep-cudnn-fuse-around"] if "cuDNN" in libs else [])
    layout = {"conv-channels-last": ["algorithm-structure/conv-channels-last"],
              "conv-gemm": ["algorithm-structure/conv-implicit-gemm"],
              "conv-depthwise": ["algorithm-structure/conv-depthwise-stencil"]}.get(variant.id.split("+")[0], [])
    pids = list(dict.fromkeys([*(principles or []), *library, *layout,
                               *(i for s in sources.values() for i in s.principle_ids)]))
    config = ExpertConfig(variant=variant.id, device=device, shape_set=program.shape_set, kernels=choices,
                          specialised=[s.tag for s in specialised])
    future, reference = cand.strip_problem_source(program.source)
    doc = f"{variant.summary}: {launches} Triton kernel launch(es) per call".replace('"', "'")
    key = cand.key_expr(variant.program)
    parts = [cand.header(program.path.name, variant.id, variant.summary, structure, list(sources.values()), pids,
                         config.model_dump()),
             *future, cand.IMPORTS,
             "# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----", reference,
             "# ---- kernels ----", helpers, kernels_src, "# ---- the candidate ----",
             cand.model_class(cand.init_signature(program.source), specialised, shared, key, doc)]
    source = "\n\n\n".join(p.strip("\n") for p in parts if p.strip()) + "\n"
    try:
        compile(source, "candidate.py", "exec")
    except SyntaxError as exc:
        raise ExpertDecline(f"a template rendered invalid Python ({exc.msg}, line {exc.lineno})") from None
    findings = check_candidate_source(source, "candidate.py")
    if findings:
        raise ExpertDecline("the rendered candidate fails the harness's static checks: "
                            + "; ".join(f.reason() for f in findings[:3]))
    return ExpertCandidate(variant=variant.id, source=source, kernels=launches, torch_ops=ops, structure=structure,
                           principle_ids=pids, config=config)


def siblings_of(path: str | Path, shape_set: str, analysed: Any = None,
                target: str | Target = "cuda") -> list[ExpertProgram]:
    """The problem's other shape sets, analysed for ``target`` (``analysed(path, name, target)``
    caches; a set the expert declines is left out: the candidate raises a clear error for its inputs)."""
    out = []
    for name in inspect_problem(path).shape_sets:
        if name == shape_set:
            continue
        try:
            out.append((analysed or analyse)(path, name, target))
        except ExpertDecline as exc:
            log.info("expert.shape_set_declined", problem=Path(path).name, shape_set=name, reason=str(exc))
    return out


def design_candidates(problem_path: str | Path, shape_set: str = "default", device: str = "cpu",
                      decisions: Decisions | None = None) -> list[ExpertCandidate]:
    """Every offered structural variant's candidate, in the packs' order (without ``decisions``,
    the built-in packs': the default ``fused`` first); ExpertDecline when none."""
    from agents.expert.choices import choices_for

    choices = choices_for(device, decisions)
    program = analyse(problem_path, shape_set, choices.target)
    siblings = siblings_of(problem_path, shape_set, target=choices.target)
    out = [render(program, o.variant, choices.target, siblings=siblings, pick=o.pick, principles=o.principle_ids)
           for o in choices.offers(program)]
    if not out:
        raise ExpertDecline("the principle packs switched off every variant that applies to this problem")
    log.info("expert.designed", problem=Path(problem_path).name, variants=[c.variant for c in out])
    return out
