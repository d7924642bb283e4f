"""What the principle packs decide for one problem, as the expert agents use it.

:class:`Choices` wraps ``principles.decide``'s answer for a problem and the device it is tuned for:

* the :class:`~agents.expert.target.Target` (device kind, SM count, heuristic constants);
* which structural variants are offered, in which order (``variants:`` switches and priorities;
  ``conv-gemm`` and ``conv-gemm-registers`` move last where a convolution reduces more than the constant
  ``algorithm-structure/conv-gemm-first-max-k`` products per output),
  plus one variant per user template a pack offers for these facts (``kernel_templates:``): the
  first offered variant with the kernels that template applies to rendered by it, offered right
  after that variant and named ``<variant>+<pack>/<template>``;
* the values a tuner tries per template parameter (the template's own ``tuning_space``, edited by
  the packs' ``tuning:`` blocks);
* for every answer, the principles that changed it, so a draft names them truthfully.

Without decisions (a caller that hands none) the built-in packs' defaults apply: the behaviour the
expert codegen had before packs drove it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from agents.expert.ir.nodes import MatmulNode
from agents.expert.target import CONV_GEMM_FIRST_MAX_K, Target, as_target, target_from
from agents.expert.templates import Template, all_templates, template_for

if TYPE_CHECKING:
    from agents.expert.design import ExpertConfig, ExpertProgram, Pick, Variant
    from agents.expert.kernel import Kernel
    from egg.device import DeviceFacts
    from principles import Decisions, PackSet

log = structlog.get_logger(__name__)


CONV_GEMM = "conv-gemm"
CONV_GEMMS = (CONV_GEMM, "conv-gemm-registers")  # the implicit-GEMM variants (the input rounded in memory; in registers)


def _conv_gemms(variant: Variant) -> list[MatmulNode]:
    return [n for n in variant.program.graph.nodes.values() if isinstance(n, MatmulNode) and n.aten == "aten.convolution"]


def conv_gemm_k(variant: Variant) -> int:
    """The longest reduction (products per output) of the variant's implicit-GEMM convolutions."""
    return max((n.k for n in _conv_gemms(variant)), default=0)


def conv_gemm_phased(variant: Variant) -> bool:
    """Whether the variant computes a strided transposed convolution as phase GEMMs."""
    return any(n.out_index is not None for n in _conv_gemms(variant))


@dataclass
class Offer:
    """A variant to render, the template picker for its kernels, and the principles that put it here."""

    variant: Variant
    pick: Pick | None = None
    principle_ids: list[str] = field(default_factory=list)


@dataclass
class Choices:
    target: Target
    decisions: Decisions | None = None
    templates: list[Any] = field(default_factory=list)  # user kernel templates offered for these facts
    deciders: dict[str, str] = field(default_factory=dict)  # user template name -> principle offering it

    # -- variants --------------------------------------------------------------------------------
    def offers(self, program: ExpertProgram) -> list[Offer]:
        """The variants to offer, in order (see the module docstring)."""
        ids = [v.id for v in program.variants]
        order, by = self.decisions.order_variants(ids) if self.decisions else (ids, [])
        gemm_convs = [v for v in order if v in CONV_GEMMS]
        if gemm_convs:  # the constant decides where they go, either way
            first = program.variant(gemm_convs[0])
            # phase GEMMs (strided transposed convolutions) lost to cuDNN's plans on the H100 (KernelBench
            # level 2 #16 10.1 ms against 3.5, #26, #36; BENCHMARKS.md 2026-12-05 sixth session); since
            # their stores and stages were fixed, back to back they win #26, tie #16, lose #36 (2026-12-06):
            # after cuDNN's plans until a judged sweep ranks them
            if conv_gemm_k(first) > int(self.target.const(CONV_GEMM_FIRST_MAX_K)) or conv_gemm_phased(first):
                order = [v for v in order if v not in CONV_GEMMS] + gemm_convs  # long reductions: cuDNN's plans first
            by = list(dict.fromkeys([*by, *self.target.credit(CONV_GEMM_FIRST_MAX_K)]))
        out: list[Offer] = []
        for vid in order:
            variant = program.variant(vid)
            out.append(Offer(variant, None, list(by)))
        for user in self.templates:
            base = next((o.variant for o in out if any(user.applies(k) is None for k in o.variant.program.kernels)),
                        None)
            if base is None:
                log.info("expert.user_template_unused", template=user.name, reason="applies to no kernel")
                continue
            offer = Offer(program.variant(f"{base.id}+{user.name}"), self.picker(user), [self.deciders[user.name]])
            at = next(i for i, o in enumerate(out) if o.variant.id == base.id) + 1
            out.insert(at, offer)
        return out

    def enabled(self, variant_id: str) -> bool:
        return self.decisions is None or self.decisions.variant_enabled(variant_id.split("+", 1)[0])

    # -- templates -------------------------------------------------------------------------------
    def named(self, name: str) -> Template | None:
        return next((t for t in [*self.templates, *all_templates()] if t.name == name), None)

    def picker(self, preferred: Any) -> Pick:
        def pick(kernel: Kernel) -> Template:
            return preferred if preferred.applies(kernel) is None else template_for(kernel)
        return pick

    def picker_for(self, config: ExpertConfig) -> Pick | None:
        """Re-render an expert file with the templates its header names; None when all are built-in.
        ValueError when a template it names is not offered any more."""
        builtin = {t.name for t in all_templates()}
        names = {k.kernel: k.template for k in config.kernels if k.template not in builtin}
        if not names:
            return None
        chosen = {}
        for kernel, name in names.items():
            template = self.named(name)
            if template is None:
                raise ValueError(f"kernel template {name} is not offered for this problem any more")
            chosen[kernel] = template

        def pick(kernel: Kernel) -> Template:
            t = chosen.get(kernel.name)
            return t if t is not None and t.applies(kernel) is None else template_for(kernel)
        return pick

    # -- tuning ----------------------------------------------------------------------------------
    def space(self, template: Template, kernel: Kernel) -> tuple[dict[str, list[Any]], dict[str, list[str]]]:
        """The values to try per parameter and, per parameter, the principles that changed them."""
        base = template.tuning_space(kernel)
        if self.decisions is None:
            return base, {}
        space: dict[str, list[Any]] = {}
        by: dict[str, list[str]] = {}
        for param in [*base, *(p for p in self.decisions.tuning.get(template.name, {}) if p not in base)]:
            space[param], by[param] = self.decisions.values(template.name, param, base.get(param, []))
        return space, by


def choices_for(kind: str, decisions: Decisions | None = None) -> Choices:
    """The choices for a device kind (``cpu``/``cuda``) under ``decisions`` (None: built-ins)."""
    if decisions is None:
        return Choices(as_target(kind))
    from principles.templates import instantiate_template

    templates, deciders = [], {}
    for choice in decisions.kernel_templates:
        templates.append(instantiate_template(Path(choice.path), choice.object, choice.ref))
        deciders[choice.ref] = choice.principle
    return Choices(target_from(kind, decisions), decisions, templates, deciders)


def decisions_for(problem_path: str | Path, packs: PackSet, device: DeviceFacts | None = None,
                  shape_set: str = "default") -> Decisions:
    """The packs' decisions for a problem file: its analysis's facts on ``device`` (default: this
    machine's GPU, else the H200 defaults). What a caller without the graph uses."""
    from egg.analysis import analyze_problem
    from egg.device import device_facts
    from principles import Facts, decide, device_table

    facts = device or device_facts("auto", device_table(packs))
    analysis = analyze_problem(Path(problem_path), shape_set=shape_set)
    return decide(packs, Facts.from_analysis(analysis, facts))
