"""The resolver: the packs' decisions for one problem, and which principle decided each.

``decide(packs, facts)`` walks the principles in effect in load order (built-ins, entry points,
``--principles`` paths; inside a pack, in order) and applies every decision block whose facts
match. A block applies when the principle applies to the problem (its ``applies_to`` meets the
problem's op classes, its ``bottleneck``, if set, is the problem's, its pack's ``targets`` include
the device's arch) and every condition of its ``when`` holds. Later blocks act on what earlier
ones left, so a user's pack (loaded last) has the last word; a principle overridden by id takes
its decisions with it.

The result, :class:`Decisions`, is data (JSON for reports and ``egg principles explain``) with
the questions an expert agent asks: the values to try for a template's parameter given its own
(:meth:`Decisions.space`), whether a variant is on and in which order (:meth:`order_variants`),
a constant's value (:meth:`constant`), the user templates to offer, and for each answer the
principle ids that changed it, so drafts can name them truthfully.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from egg.device import DeviceFacts, GpuSpec, merge_tables
from egg.vocabulary import Bottleneck, OpClass
from principles.decisions import Decision, Scalar, When
from principles.packset import Entry, PackSet


class Facts(BaseModel):
    """What the analysis found about a problem, and the device it is tuned for."""

    op_classes: list[OpClass] = Field(default_factory=list)
    bottleneck: Bottleneck | None = None
    patterns: list[str] = Field(default_factory=list)
    dtypes: list[str] = Field(default_factory=list)
    device: str = "NVIDIA H200"
    sm_count: int | None = None
    arch: str | None = None

    @classmethod
    def from_analysis(cls, analysis: Mapping[str, Any] | BaseModel, device: DeviceFacts) -> Facts:
        """Facts from a ``ProblemAnalysis`` (or its JSON form, as the graph keeps it)."""
        data = analysis.model_dump(mode="json") if isinstance(analysis, BaseModel) else dict(analysis)
        tensors = [*data.get("inputs", []), *data.get("parameters", []), *data.get("outputs", [])]
        return cls(
            op_classes=data.get("op_classes", []),
            bottleneck=data.get("bottleneck"),
            patterns=sorted({p["family"] for p in data.get("patterns") or []}),
            dtypes=sorted({t["dtype"] for t in tensors if t.get("is_tensor", True)}),
            device=device.name,
            sm_count=device.sm_count,
            arch=device.arch,
        )

    def line(self) -> str:
        parts = [
            f"op classes {', '.join(c.value for c in self.op_classes) or '-'}",
            f"bottleneck {self.bottleneck.value if self.bottleneck else '-'}",
            f"patterns {', '.join(self.patterns) or '-'}",
            f"dtypes {', '.join(self.dtypes) or '-'}",
            f"device {self.device}" + (f" ({self.arch}, {self.sm_count} SMs)" if self.sm_count else ""),
        ]
        return "; ".join(parts)


class Edit(BaseModel):
    op: Literal["add", "remove", "replace"]
    values: list[Scalar]
    principle: str


class Setting(BaseModel):
    value: Scalar
    principle: str


class VariantDecision(BaseModel):
    enabled: Setting | None = None
    priority: Setting | None = None


class ConstantDecision(BaseModel):
    name: str
    value: Scalar
    default: Scalar
    declared_by: str  # the pack that declares it
    # the principle that set ``value``: a decision's, else the one whose advice the default encodes
    decided_by: str | None = None
    default_by: str | None = None  # the principle behind the default (``decided_by`` until a decision)


class TemplateChoice(BaseModel):
    ref: str  # '<pack>/<name>': also the template object's ``name``
    path: str  # the module
    object: str
    principle: str


class Skipped(BaseModel):
    principle: str
    block: int
    reason: str


class Decisions(BaseModel):
    """The effective decisions for one problem (see the module docstring)."""

    facts: Facts
    tuning: dict[str, dict[str, list[Edit]]] = Field(default_factory=dict)
    variants: dict[str, VariantDecision] = Field(default_factory=dict)
    constants: dict[str, ConstantDecision] = Field(default_factory=dict)
    kernel_templates: list[TemplateChoice] = Field(default_factory=list)
    applied: list[str] = Field(default_factory=list, description="principles whose decisions applied, in order")
    skipped: list[Skipped] = Field(default_factory=list, description="decision blocks that did not apply, and why")

    # tuning ---------------------------------------------------------------------------------
    def values(self, template: str, param: str, base: Sequence[Scalar]) -> tuple[list[Scalar], list[str]]:
        """The values to try for ``template.param`` given the template's own ``base``, and the
        principles whose edits changed them (an edit that changes nothing is not counted)."""
        values = list(base)
        deciders: list[str] = []
        for edit in self.tuning.get(template, {}).get(param, []):
            before = list(values)
            if edit.op == "replace":
                values = list(edit.values)
            elif edit.op == "add":
                values += [v for v in edit.values if not _contains(values, v)]
            else:
                values = [v for v in values if not _contains(edit.values, v)]
            if values != before and edit.principle not in deciders:
                deciders.append(edit.principle)
        return values, deciders

    def space(self, template: str, base: Mapping[str, Sequence[Scalar]]) -> tuple[dict[str, list[Scalar]], list[str]]:
        """A template's whole tuning space after the edits (parameters the packs add are appended),
        and the principles that changed it."""
        params = list(base) + [p for p in self.tuning.get(template, {}) if p not in base]
        space: dict[str, list[Scalar]] = {}
        deciders: list[str] = []
        for param in params:
            space[param], by = self.values(template, param, base.get(param, []))
            deciders += [p for p in by if p not in deciders]
        return space, deciders

    # variants -------------------------------------------------------------------------------
    def variant_enabled(self, variant: str) -> bool:
        setting = self.variants.get(variant, VariantDecision()).enabled
        return True if setting is None else bool(setting.value)

    def order_variants(self, variants: Sequence[str]) -> tuple[list[str], list[str]]:
        """The enabled variants, higher priority first (ties keep the given order), and the
        principles that switched one off or moved one."""
        enabled = [v for v in variants if self.variant_enabled(v)]
        ordered = sorted(enabled, key=lambda v: -self._priority(v))
        deciders: list[str] = []
        for v in variants:
            decision = self.variants.get(v, VariantDecision())
            # switching on what is on anyway, or a priority that moves nothing, decides nothing
            if decision.enabled is not None and not decision.enabled.value:
                deciders.append(decision.enabled.principle)
            elif decision.priority is not None and ordered.index(v) != enabled.index(v):
                deciders.append(decision.priority.principle)
        return ordered, list(dict.fromkeys(deciders))

    def _priority(self, variant: str) -> int:
        setting = self.variants.get(variant, VariantDecision()).priority
        return int(setting.value) if setting is not None else 0

    # constants ------------------------------------------------------------------------------
    def constant(self, name: str) -> Scalar:
        """The value of a declared constant (``'<pack>/<name>'``); KeyError if no pack declares it."""
        if name not in self.constants:
            raise KeyError(f"no pack declares the constant {name!r} (declared: {', '.join(sorted(self.constants))})")
        return self.constants[name].value

    def constant_decider(self, name: str) -> str | None:
        return self.constants[name].decided_by if name in self.constants else None

    # explain --------------------------------------------------------------------------------
    def explain(self) -> list[str]:
        """One line per decision in effect, naming the principle behind it."""
        lines: list[str] = []
        for template, params in sorted(self.tuning.items()):
            for param, edits in params.items():
                for e in edits:
                    what = {"add": "adds", "remove": "removes", "replace": "sets"}[e.op]
                    lines.append(f"tuning {template}.{param}: {what} {_fmt(e.values)}  [{e.principle}]")
        for variant, decision in sorted(self.variants.items()):
            if decision.enabled is not None:
                state = "on" if decision.enabled.value else "off"
                lines.append(f"variant {variant}: switched {state}  [{decision.enabled.principle}]")
            if decision.priority is not None:
                lines.append(f"variant {variant}: priority {decision.priority.value}  [{decision.priority.principle}]")
        for name, c in sorted(self.constants.items()):
            if c.decided_by != c.default_by or c.value != c.default:
                lines.append(f"constant {name} = {c.value!r} (default {c.default!r})  [{c.decided_by}]")
        for t in self.kernel_templates:
            lines.append(f"kernel template {t.ref} offered ({t.path}:{t.object})  [{t.principle}]")
        return lines


def _contains(values: Sequence[Scalar], value: Scalar) -> bool:
    # 1 == True in Python; a bool and an int are different tuning values
    return any(v == value and type(v) is type(value) for v in values)


def _fmt(values: Sequence[Scalar]) -> str:
    return "[" + ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values) + "]"


def _why_not(entry: Entry, when: When, facts: Facts) -> str | None:
    """Why a block does not apply to ``facts``, or None when it does."""
    p = entry.principle
    if facts.op_classes and not set(p.applies_to) & set(facts.op_classes):
        return f"applies_to ({', '.join(c.value for c in p.applies_to)}) meets none of the problem's op classes"
    if p.bottleneck is not None and facts.bottleneck is not None and p.bottleneck != facts.bottleneck:
        return f"bottleneck {p.bottleneck.value}, the problem's is {facts.bottleneck.value}"
    targets = entry.pack.pack.targets
    if targets and facts.arch is not None and facts.arch not in targets:
        return f"pack {entry.pack.name} targets {', '.join(targets)}, the device is {facts.arch}"
    checks: list[tuple[str, list[str], list[str]]] = [
        ("op_classes", [c.value for c in when.op_classes], [c.value for c in facts.op_classes]),
        ("bottleneck", [b.value for b in when.bottleneck], [facts.bottleneck.value] if facts.bottleneck else []),
        ("patterns", list(when.patterns), list(facts.patterns)),
        ("dtypes", list(when.dtypes), list(facts.dtypes)),
    ]
    for name, wanted, have in checks:
        if wanted and not set(wanted) & set(have):
            return f"when.{name} [{', '.join(wanted)}]: the problem has [{', '.join(have) or 'none'}]"
    if when.devices and not any(d.lower() in facts.device.lower() for d in when.devices):
        return f"when.devices [{', '.join(when.devices)}]: the device is {facts.device}"
    if when.sm_count is not None and (facts.sm_count is None or not when.sm_count.holds(facts.sm_count)):
        return f"when.sm_count {when.sm_count.text()}: the device has {facts.sm_count or 'an unknown number of'} SMs"
    return None


def _apply(out: Decisions, decision: Decision, principle: str, packs: PackSet) -> None:
    for template, params in decision.tuning.items():
        for param, edit in params.items():
            edits = out.tuning.setdefault(template, {}).setdefault(param, [])
            if edit.replace is not None:
                edits.append(Edit(op="replace", values=edit.replace, principle=principle))
            if edit.remove:
                edits.append(Edit(op="remove", values=edit.remove, principle=principle))
            if edit.add:
                edits.append(Edit(op="add", values=edit.add, principle=principle))
    for variant, switch in decision.variants.items():
        current = out.variants.setdefault(variant, VariantDecision())
        if switch.enabled is not None:
            current.enabled = Setting(value=switch.enabled, principle=principle)
        if switch.priority is not None:
            current.priority = Setting(value=switch.priority, principle=principle)
    for name, value in decision.constants.items():
        out.constants[name].value = value
        out.constants[name].decided_by = principle
    for ref in decision.kernel_templates:
        template, path = packs.kernel_template(ref)
        out.kernel_templates = [t for t in out.kernel_templates if t.ref != ref]
        out.kernel_templates.append(TemplateChoice(ref=ref, path=str(path), object=template.object,
                                                   principle=principle))


def decide(packs: PackSet, facts: Facts) -> Decisions:
    """Every decision of the packs in effect for ``facts``, with the principle behind each."""
    out = Decisions(facts=facts)
    for ref, constant in packs.constants().items():
        out.constants[ref] = ConstantDecision(name=ref, value=constant.default, default=constant.default,
                                              declared_by=packs.constant_pack(ref), decided_by=constant.principle,
                                              default_by=constant.principle)
    for entry in packs.entries():
        for index, decision in enumerate(entry.principle.decisions):
            reason = _why_not(entry, decision.when, facts)
            if reason is not None:
                out.skipped.append(Skipped(principle=entry.principle.id, block=index, reason=reason))
                continue
            _apply(out, decision, entry.principle.id, packs)
            if entry.principle.id not in out.applied:
                out.applied.append(entry.principle.id)
    return out


def device_table(packs: PackSet) -> list[GpuSpec]:
    """The known-GPU table: the packs' ``devices`` rows (latest pack first) over the built-in one."""
    return merge_tables(packs.devices())
