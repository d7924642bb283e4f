"""The expert codegen: from a problem file to complete candidate files, without an LLM.

Pipeline: :func:`~agents.expert.trace.trace_problem` (fx graph + shapes) -> in-place rewrite ->
:func:`~agents.expert.lowering.lower` (canonical ops) -> :func:`~agents.expert.partition.partition`
(fusion groups, one template each) -> :func:`render` (the candidate source).

A problem gets a few structurally different *variants*:

* ``fused``: library ops (cuBLAS, cuDNN, ...) stay torch calls; everything around them is fused
  into Triton kernels (elementwise chains, and reductions when a reduction template matches);
* ``fused-scalars``: as ``fused``, and 0-d float64 scalar chains (AdamW's ``1 - beta ** step``)
  join the kernel they feed, computed in fp64 by every program: one launch instead of one torch
  call per scalar op (host time, not GPU time, is what those calls cost);
* ``triton-matmul-dequant`` (``-3xtf32`` / ``-ieee`` for fp32): a matmul whose right operand is
  computed elementwise from inputs that only feed it (a weight-only-quantised linear's
  ``w_int8.to(x.dtype) * scale[:, None]``) takes those ops as a prologue: the Triton GEMM reads
  the int8 weight and dequantises each B tile in registers, the dequantised weight is never
  written. ``triton-matmul-prologue`` when the prologue reads no integer weight;
* ``triton-matmul-3xtf32`` / ``triton-matmul-ieee`` (fp32 matmuls) or ``triton-matmul`` (16-bit):
  as ``fused``, but each linear/matmul/bmm + its elementwise epilogue (possibly empty) is one
  Triton matmul kernel. fp32 operands reach tl.dot as 3xTF32 (tensor cores, error close to fp32)
  or as ieee fp32 (exact fp32 FMA, the fallback when 3xTF32 misses the tolerance). Offered when a
  matmul has an epilogue, when the matmul is all there is (nothing else to fuse), or, for
  3xTF32, always (tensor cores can beat cuBLAS's fp32 SGEMM); ordered after ``fused``;
* ``chains-only``: reductions stay torch calls, only the elementwise chains are fused (a
  fallback structure when ``fused`` used a reduction template).

Each rendered file carries ``# EGG-EXPERT-CONFIG: {...}`` (variant, device and every kernel's
config) so a stage-2 tuner can re-render it with other parameters.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel, Field
from torch import fx

from agents.expert.emit import (
    IMPORTS,
    forward_source,
    init_source,
    strip_problem_source,
)
from agents.expert.kernels.base import KernelPlan, Template
from agents.expert.kernels.expr import helper_source
from agents.expert.kernels.matmul import MatmulEpilogueTemplate
from agents.expert.kernels.matmul_prologue import SMALL_INTS
from agents.expert.lowering import Lowered, lower, target_info
from agents.expert.partition import Group, partition
from agents.expert.recognise import fold_norms
from agents.expert.recognise_rotary import fold_rotary
from agents.expert.registry import load_templates
from agents.expert.trace import ExpertDecline, TracedProblem, trace_problem
from egg.analysis.optable import classify
from egg.evaluate.static_checks import check_candidate_source
from egg.vocabulary import OpClass

log = structlog.get_logger(__name__)

CONFIG_TAG = "# EGG-EXPERT-CONFIG: "
_LIBRARY = {OpClass.CONV: "cuDNN", OpClass.MATMUL: "cuBLAS", OpClass.POOLING: "ATen",
            OpClass.ATTENTION: "the fused SDPA kernels"}
_STRUCTURE_PRINCIPLES = {OpClass.CONV: "algorithm-structure/conv-keep-cudnn-fuse-around",
                         OpClass.MATMUL: "algorithm-structure/keep-library-gemm"}


class KernelChoice(BaseModel):
    launcher: str
    template: str
    config: dict[str, Any] = Field(default_factory=dict)


class ExpertConfig(BaseModel):
    """The machine-readable block in a candidate's header."""

    version: int = 1
    variant: str
    device: str
    kernels: list[KernelChoice]

    def by_launcher(self) -> dict[str, dict[str, Any]]:
        return {k.launcher: dict(k.config) for k in self.kernels}


class Rendered(BaseModel):
    source: str
    structure: str
    principle_ids: list[str]
    config: ExpertConfig
    templates: dict[str, str]  # launcher -> template name


@dataclass
class Variant:
    id: str
    summary: str
    groups: list[Group]
    kept: list[str] = field(default_factory=list)  # heavy ops left to libraries: "conv2d (cuDNN)"
    principle_ids: list[str] = field(default_factory=list)


@dataclass
class ExpertProgram:
    tp: TracedProblem
    low: dict[str, Lowered]
    variants: list[Variant]
    templates: list[Template]
    notes: list[str] = field(default_factory=list)

    def variant(self, variant_id: str) -> Variant:
        for v in self.variants:
            if v.id == variant_id:
                return v
        if variant_id == "triton-matmul":  # the fp32 Triton matmul's id before the precision variants
            return self.variant("triton-matmul-ieee")
        raise ExpertDecline(f"variant {variant_id!r} does not apply to this problem any more")


def read_config(source: str) -> ExpertConfig | None:
    """The config block of an expert-generated candidate, or None (not ours, or damaged)."""
    for line in source.splitlines()[:60]:
        if line.startswith(CONFIG_TAG):
            try:
                return ExpertConfig.model_validate(json.loads(line[len(CONFIG_TAG):]))
            except ValueError:
                return None
    return None


def _rewrite_inplace(tp: TracedProblem) -> None:
    """Later readers of a tensor mutated in place read the in-place node's result instead, so the
    mutation can be computed out of place (fused) without changing what anyone sees."""
    nodes = list(tp.gm.graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    for node in nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        key, _, inplace = target_info(node, tp)
        if not inplace or not node.args or not isinstance(node.args[0], fx.Node):
            continue
        base = node.args[0]
        if base.op == "get_attr":
            raise ExpertDecline(f"forward mutates parameter/buffer {base.target} in place ({node.name})")
        if base.op != "placeholder":
            base_key = target_info(base, tp)[0] if base.op != "get_attr" else ""
            if classify(base_key) is None or base_key == "getitem":
                raise ExpertDecline(f"in-place {key} ({node.name}) writes through a view: aliasing is not modelled")
        for user in list(base.users):
            if user is not node and order[user] > order[node]:
                user.replace_input_with(base, node)


def _launcher_name(group: Group, taken: set[str]) -> str:
    ops = list(dict.fromkeys(n.op for n in group.spec.nodes))
    base = "fused_" + "_".join(ops[:4]) + ("_etc" if len(ops) > 4 else "")
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


def _kept_library_ops(tp: TracedProblem, low: dict[str, Lowered], groups: list[Group]) -> list[tuple[str, OpClass]]:
    fused = {m for g in groups for m in g.members}
    kept = []
    for lowered in low.values():
        if lowered.op_class in _LIBRARY and lowered.node not in fused:
            kept.append((lowered.key, lowered.op_class))
    return kept


def _variant(vid: str, summary: str, groups: list[Group], tp: TracedProblem, low: dict[str, Lowered]) -> Variant:
    taken: set[str] = set()
    for g in groups:
        g.launcher = _launcher_name(g, taken)
    kept = _kept_library_ops(tp, low, groups)
    pids = [_STRUCTURE_PRINCIPLES[c] for _, c in kept if c in _STRUCTURE_PRINCIPLES]
    return Variant(id=vid, summary=summary, groups=groups,
                   kept=list(dict.fromkeys(f"{k} ({_LIBRARY[c]})" for k, c in kept)),
                   principle_ids=list(dict.fromkeys(pids)))


def _decline_reason(tp: TracedProblem, low: dict[str, Lowered], notes: list[str],
                    matmul_notes: list[str] | None = None) -> str:
    real = [lw for lw in low.values() if lw.op_class is not None and lw.key != "tuple_getitem"]
    if not real:
        return "no expert template applies: the forward has no computing op (views only)"
    heavy = [lw for lw in real if lw.op_class in _LIBRARY]
    if heavy and len(heavy) == len(real):
        ops = ", ".join(dict.fromkeys(lw.key for lw in heavy))
        libs = ", ".join(dict.fromkeys(_LIBRARY[lw.op_class] for lw in heavy))  # type: ignore[index]
        if matmul_notes:
            return (f"no expert template for op {ops} alone: {libs} runs it; the Triton matmul template "
                    "declines it: " + "; ".join(dict.fromkeys(matmul_notes))[:400])
        return f"no expert template for op {ops} alone: {libs} already runs it; nothing to fuse"
    why = [f"{lw.key}: {lw.why_not}" for lw in real if lw.why_not and lw.op_class not in _LIBRARY]
    return "no fusable group found (" + "; ".join(dict.fromkeys(why + notes))[:400] + ")"


_RANDOM = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "bernoulli", "multinomial",
           "normal", "uniform", "randperm", "poisson", "exponential", "geometric", "cauchy", "log_normal"}


def _random_op(low: dict[str, Lowered]) -> str | None:
    """A random op the reference runs (dropout in training mode, torch.rand...): no candidate can
    reproduce its draws, so there is nothing correct to generate."""
    for lw in low.values():
        if lw.key in _RANDOM or (lw.key == "rrelu" and lw.steps and lw.steps[0].kwargs.get("training")):
            return lw.key
        if "dropout" in lw.key and lw.why_not and "random" in lw.why_not:
            return f"{lw.key}(p={lw.steps[0].kwargs.get('p')}) in training mode"
    return None


def _matmul_templates(templates: list[Template], precision: str) -> list[Template]:
    """The templates of a Triton-matmul partition: ``precision``'s matmul template first (it takes
    the fp32 matmuls), the ieee one after it (16-bit matmuls, where precision does not apply)."""
    matmuls = [t for t in templates if isinstance(t, MatmulEpilogueTemplate)]
    ordered = [t for t in matmuls if t.precision == precision] + [t for t in matmuls if t.precision == "ieee"]
    return [t for t in templates if not isinstance(t, MatmulEpilogueTemplate)] + list(dict.fromkeys(ordered))


def _matmul_variant(groups: list[Group], precision: str, nothing_else: bool) -> tuple[str, str] | None:
    """(id, summary) of the Triton-matmul variant made of ``groups``, or None when it is not worth
    offering: no matmul group, 3xTF32 that reached no matmul, or only bare matmuls (no epilogue)
    computed exactly as cuBLAS would (ieee fp32 or 16-bit) next to other work to fuse."""
    matmuls = [g for g in groups if g.kind == "matmul"]
    used = {getattr(g.template, "precision_of", lambda _: None)(g.spec) for g in matmuls}
    if not matmuls or (precision == "tf32x3" and "tf32x3" not in used):
        return None
    epilogue = any(len(g.members) > 1 for g in matmuls)
    if not (epilogue or nothing_else or precision == "tf32x3"):
        return None
    what = "matmul and its epilogue in one Triton kernel" if epilogue else "the matmul as one Triton kernel"
    if precision == "tf32x3":
        return "triton-matmul-3xtf32", f"{what}; fp32 operands as 3xTF32 on tensor cores (hi/lo split)"
    if "ieee" in used:
        return "triton-matmul-ieee", f"{what}; ieee fp32 dot (exact fp32, no tensor cores)"
    return "triton-matmul", what


def _prologue_variant(groups: list[Group], precision: str) -> tuple[str, str] | None:
    """(id, summary) of the variant whose matmuls compute their B operand per tile (a weight's
    dequantisation in the GEMM's operand load), or None when no matmul group took a prologue."""
    matmuls = [g for g in groups if g.kind == "matmul"]
    with_prologue = [g for g in matmuls if g.spec.nodes and g.spec.nodes[0].name != g.spec.anchor]
    used = {getattr(g.template, "precision_of", lambda _: None)(g.spec) for g in matmuls}
    if not with_prologue or (precision == "tf32x3" and "tf32x3" not in used):
        return None
    ints = any(v.dtype in SMALL_INTS for g in with_prologue for v in g.spec.inputs if v.is_tensor)
    tag = {"tf32x3": "-3xtf32", "ieee": "-ieee"}[precision] if used & {"tf32x3", "ieee"} else ""
    if ints:
        summary = ("one Triton GEMM reads the quantised weight as it is stored and dequantises each B tile "
                   "in registers (the dequantised weight is never written)")
    else:
        summary = "one Triton GEMM computes its B operand's elementwise prologue per loaded tile"
    dot = {"-3xtf32": "; fp32 operands as 3xTF32", "-ieee": "; ieee fp32 dot"}.get(tag, "")
    return f"triton-matmul-{'dequant' if ints else 'prologue'}{tag}", summary + dot


def analyse(problem_path: str | Path, shape_set: str = "default") -> ExpertProgram:
    """Trace, lower and partition the problem into variants; ExpertDecline when nothing applies."""
    tp = trace_problem(problem_path, shape_set)
    _rewrite_inplace(tp)
    fold_norms(tp)  # hand-written RMSNorm -> one norm node, so one kernel computes it
    fold_rotary(tp)  # x * cos + rotate_half(x) * sin for q, k... -> one rotary node, one kernel
    low = {n.name: lw for n in tp.gm.graph.nodes if (lw := lower(n, tp)) is not None}
    if (random := _random_op(low)) is not None:
        raise ExpertDecline(f"the reference draws random numbers ({random}): no candidate can reproduce them")
    templates = load_templates()
    base = partition(tp, low, templates, matmul=False)
    variants: list[Variant] = []
    signatures: set[tuple[tuple[str, ...], ...]] = set()

    def add(vid: str, summary: str, groups: list[Group]) -> None:
        sig = tuple(tuple(sorted(m.name for m in g.members)) + (g.template.name,) for g in groups)
        if groups and sig not in signatures:
            signatures.add(sig)
            variants.append(_variant(vid, summary, groups, tp, low))

    add("fused", "library ops stay torch calls, the ops around them are fused", base.groups)
    if any(lw.scalar64 for lw in low.values()):
        # 0-d float64 scalar chains (AdamW's bias corrections) join the kernel they feed, computed
        # in fp64 by every program: one launch instead of one per scalar op
        folded = {k: replace(lw, elementwise=True) if lw.scalar64 else lw for k, lw in low.items()}
        add("fused-scalars", "as fused, and 0-d float64 scalar chains are computed inside the kernels",
            partition(tp, folded, templates, matmul=False).groups)
    matmul_notes: list[str] = []
    for precision in ("tf32x3", "ieee"):  # matmuls that absorb their B operand's producers
        mm = partition(tp, low, _matmul_templates(templates, precision), matmul=True, operand_prologue=True)
        choice = _prologue_variant(mm.groups, precision)
        if choice is not None:
            add(*choice, mm.groups)
    for precision in ("tf32x3", "ieee"):
        mm = partition(tp, low, _matmul_templates(templates, precision), matmul=True)
        matmul_notes += [n for n in mm.declined if n not in base.declined]
        choice = _matmul_variant(mm.groups, precision, nothing_else=not base.groups)
        if choice is not None:
            add(*choice, mm.groups)
    if any(g.kind not in ("elementwise_chain", "matmul") for g in base.groups):
        chains = partition(tp, low, templates, matmul=False, anchors=False)
        add("chains-only", "reductions stay torch calls, elementwise chains are fused", chains.groups)
    if not variants:
        raise ExpertDecline(_decline_reason(tp, low, base.declined, matmul_notes))
    return ExpertProgram(tp=tp, low=low, variants=variants, templates=templates, notes=base.declined)


def _dedupe_definitions(chunks: list[str]) -> str:
    """Join template sources, keeping one copy of identical top-level definitions (shared helpers)."""
    seen: dict[str, str] = {}
    out: list[str] = []
    for chunk in chunks:
        tree = ast.parse(chunk)
        lines = chunk.splitlines()
        for node in tree.body:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            text = "\n".join(lines[start - 1:node.end_lineno])
            name = getattr(node, "name", None)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id  # a module-level constant of a template
            if name is not None and name in seen:
                if seen[name] != text:
                    raise ExpertDecline(f"two templates define different {name}()")
                continue
            if name is not None:
                seen[name] = text
            out.append(text)
    return "\n\n\n".join(out)


def _header(program: ExpertProgram, variant: Variant, plans: list[tuple[Group, KernelPlan]], structure: str,
            pids: list[str], config: ExpertConfig) -> str:
    lines = [f"# EGG expert candidate for {program.tp.path.name} (agents.expert: templates + heuristics, no LLM)",
             f"# structure: {structure}",
             f"# variant: {variant.id}: {variant.summary}"]
    lines += [f"#   {g.launcher} [{g.template.name}]: " + " ".join(f"{k}={v!r}" for k, v in p.config.items())
              for g, p in plans]
    lines += [f"# principles: {', '.join(pids)}", CONFIG_TAG + config.model_dump_json()]
    return "\n".join(lines)


def _model_class(program: ExpertProgram, variant: Variant, kernels: int, structure: str) -> str:
    init = init_source(program.tp.source)
    doc = structure[:150].replace('"', "'").replace("\\", "/")
    return ("class ModelNew(Model):\n"
            f'    """{variant.summary}: {kernels} Triton kernel(s)."""\n\n'
            + (init + "\n" if init else "")
            + forward_source(program.tp, variant.groups, program.low, doc))


def render(program: ExpertProgram, variant: Variant, device: str,
           overrides: dict[str, dict[str, Any]] | None = None) -> Rendered:
    """The complete candidate file for ``variant`` with each kernel's default config, updated by
    ``overrides`` (launcher -> {param: value}) where given."""
    overrides = overrides or {}
    plans: list[tuple[Group, KernelPlan]] = []
    for g in variant.groups:
        config = {**g.template.default_config(g.spec, device), **overrides.get(g.launcher, {})}
        plans.append((g, g.template.render(g.spec, config, g.launcher)))
    kernels = _dedupe_definitions([p.source for _, p in plans])
    kernels = helper_source(kernels) + "\n" + kernels
    pids = list(dict.fromkeys(variant.principle_ids + [i for _, p in plans for i in p.principle_ids]))
    kept = f"torch keeps {', '.join(variant.kept)}; " if variant.kept else ""
    structure = kept + "; ".join(dict.fromkeys(p.structure for _, p in plans))
    config = ExpertConfig(variant=variant.id, device=device,
                          kernels=[KernelChoice(launcher=g.launcher, template=g.template.name, config=p.config)
                                   for g, p in plans])
    future, reference = strip_problem_source(program.tp.source)
    parts = [_header(program, variant, plans, structure, pids, config), *future, IMPORTS,
             "# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----", reference,
             "# ---- kernels ----", kernels, "# ---- the candidate ----",
             _model_class(program, variant, len(plans), structure)]
    source = "\n\n\n".join(p.strip("\n") for p in parts) + "\n"
    try:  # bytecode compilation catches what ast.parse lets through (duplicate parameters, ...)
        compile(source, "candidate.py", "exec")
    except SyntaxError as exc:
        raise ExpertDecline(f"a template rendered invalid Python ({exc.msg}, line {exc.lineno}); "
                            f"kernels: {', '.join(g.template.name for g, _ in plans)}") from None
    findings = check_candidate_source(source, "candidate.py")
    if findings:
        raise ExpertDecline("the rendered candidate fails the harness's static checks: "
                            + "; ".join(f.reason() for f in findings[:3]))
    return Rendered(source=source, structure=structure, principle_ids=pids, config=config,
                    templates={g.launcher: g.template.name for g, _ in plans})
