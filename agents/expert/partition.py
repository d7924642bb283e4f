"""Cut the lowered graph into fusion groups, each computed by one template's kernel.

Every group has exactly one value that leaves it (its output); every other member is used only
inside the group, so fusing it never drops a value someone else reads. Two kinds of groups:

* anchored groups: a matmul / reduction / normalization / softmax / scan / loss / pooling node
  with the elementwise producers of its input (prologue) and the chain of single-use elementwise
  consumers after it (epilogue), when a registered template matches the whole group (the largest
  matching group wins: full, anchor+epilogue, prologue+anchor, anchor alone);
* elementwise chains: maximal single-output sets of fusable elementwise nodes, grown backwards
  from each chain's last node.

Matmul groups (only when ``partition(matmul=True)``) may have an empty epilogue: a matmul alone
is one Triton matmul kernel. They take no prologue on the left operand; with
``operand_prologue=True`` they take the producers of the right operand that feed nothing else
(a weight's dequantisation, which the matmul template applies per loaded B tile). Everything else (convolutions, matmuls of the library variant,
views, unsupported ops) stays a torch call.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import structlog
from torch import fx

from agents.expert.grow import grow
from agents.expert.kernels.base import GroupSpec, NodeSpec, Template, ValueSpec
from agents.expert.kernels.rotary import ROTARY_KEY
from agents.expert.lowering import Lowered, ParamRef, StepRef
from agents.expert.prologue import (
    full_shape_prologue,
    right_operand_prologue,
    shared_prologue,
)
from agents.expert.trace import Meta, TracedProblem
from egg.vocabulary import OpClass

log = structlog.get_logger(__name__)

ANCHOR_KINDS: dict[OpClass, str] = {
    OpClass.REDUCTION: "reduction",
    OpClass.NORMALIZATION: "normalization",
    OpClass.SOFTMAX: "softmax",
    OpClass.SCAN: "scan",
    OpClass.LOSS: "loss",
    OpClass.POOLING: "pooling",
    OpClass.MATMUL: "matmul",
}
MATMUL_KEYS = {"linear", "mm", "matmul", "addmm", "bmm"}
SCATTER_KEYS = {"setitem"}  # out-of-place item assignment (fxpatch.setitem_copy): kind "scatter"
# nodes a recogniser folded into one op of its own template (recognise_rotary.py): elementwise in
# nature, so chains-only variants keep them fused too
FOLDED_KINDS: dict[str, str] = {ROTARY_KEY: "rotary"}
_IDENTITY_OPS = {"identity", "clone", "contiguous", "dropout", "dropout1d", "dropout2d", "dropout3d",
                 "alpha_dropout", "feature_alpha_dropout", "pos"}


@dataclass
class Group:
    members: list[fx.Node]
    output: fx.Node
    kind: str
    anchor: fx.Node | None
    template: Template
    spec: GroupSpec
    sources: list[Any]  # per GroupSpec.inputs entry: the fx.Node or ParamRef that feeds it
    launcher: str = ""
    extra_outputs: list[fx.Node] = field(default_factory=list)  # also leave the group (GroupSpec.extra_outputs)


@dataclass
class Partition:
    groups: list[Group] = field(default_factory=list)
    declined: list[str] = field(default_factory=list)  # why anchors stayed torch calls


def _users(node: fx.Node) -> list[fx.Node]:
    return list(node.users)


def _fold_target(node: fx.Node, low: dict[str, Lowered]) -> fx.Node | None:
    """For max(dim)/min(dim) whose only use is ``[0]``: the getitem node holding the values."""
    users = _users(node)
    if len(users) == 1 and users[0].target is operator.getitem and users[0].args[1:] == (0,):
        return users[0]
    return None


def build_spec(members: list[fx.Node], output: fx.Node, kind: str, anchor: fx.Node | None,
               tp: TracedProblem, low: dict[str, Lowered],
               extra: list[fx.Node] | None = None) -> tuple[GroupSpec, list[Any]]:
    """The GroupSpec of ``members`` (topological order) and what feeds each of its inputs."""
    names = {m.name for m in members}
    inputs: list[ValueSpec] = []
    sources: list[Any] = []
    taken: set[str] = set(names)
    by_source: dict[Any, str] = {}

    def ref(value: Any) -> Any:
        if isinstance(value, StepRef):
            return value.name
        if isinstance(value, fx.Node) and value.name in names:
            folded = low.get(value.name)
            if folded is not None and folded.key in ("amax", "amin"):
                return _fold_target(value, low).name  # type: ignore[union-attr]
            return value.name
        if isinstance(value, (fx.Node, ParamRef)):
            key = value.name if isinstance(value, fx.Node) else f"param:{value.expr}"
            if key not in by_source:
                meta = value.meta if isinstance(value, ParamRef) else tp.meta[value.name]
                name = value.name
                while name in taken:
                    name += "_in"
                taken.add(name)
                by_source[key] = name
                inputs.append(ValueSpec(name=name, is_tensor=meta.is_tensor, shape=list(meta.shape),
                                        dtype=meta.dtype if meta.is_tensor else type(meta.value).__name__,
                                        value=None if meta.is_tensor else meta.value))
                sources.append(value)
            return by_source[key]
        return value

    nodes: list[NodeSpec] = []
    for member in members:
        lowered = low.get(member.name)
        if lowered is None or lowered.key == "tuple_getitem":
            continue  # the [0] of a folded max(dim): the max step already carries its name
        meta = tp.meta.get(member.name, Meta(False))
        name_override = None
        if lowered.key in ("amax", "amin"):
            target = _fold_target(member, low)
            assert target is not None
            name_override, meta = target.name, tp.meta[target.name]
        for step in lowered.steps:
            step_name = name_override if (name_override and step.name == member.name) else step.name
            operands = [ref(o) for o in step.operands]
            nodes.append(NodeSpec(name=step_name, op=step.op, operands=operands, kwargs=dict(step.kwargs),
                                  shape=list(meta.shape), dtype=meta.dtype or "float32"))
    spec = GroupSpec(nodes=nodes, inputs=inputs, output=output.name, kind=kind,
                     extra_outputs=[e.name for e in extra or []],
                     anchor=(low[anchor.name].steps[-1].name if anchor is not None else None))
    if anchor is not None and low[anchor.name].key in ("amax", "amin"):
        spec.anchor = _fold_target(anchor, low).name  # type: ignore[union-attr]
    return spec, sources


def _absorb_producers(members: set[fx.Node], low: dict[str, Lowered], assigned: set[fx.Node]) -> None:
    """Grow ``members`` with fusable elementwise producers whose every user is already a member."""
    def admit(p: fx.Node) -> bool:
        lp = low.get(p.name)
        return p not in assigned and lp is not None and lp.elementwise and all(u in members for u in p.users)

    grow(members, admit)


def _epilogue_group(value: fx.Node, low: dict[str, Lowered], assigned: set[fx.Node], tp: TracedProblem,
                    order: dict[fx.Node, int], same_shape: bool) -> tuple[set[fx.Node], fx.Node | None]:
    """The largest single-output elementwise group that consumes every use of ``value``.

    Candidate outputs are the fusable elementwise descendants of ``value``, latest first; from
    each, producers are absorbed as for a plain chain, and the first group that ends up holding
    every user of ``value`` wins (``x * sigmoid(x)`` after a matmul is one epilogue).
    """
    reach: list[fx.Node] = []
    frontier, seen = [value], {value}
    while frontier:
        for u in frontier.pop().users:
            lu = low.get(u.name)
            if u in seen or u in assigned or lu is None or not lu.elementwise:
                continue
            seen.add(u)
            reach.append(u)
            frontier.append(u)
    for out in sorted(reach, key=order.__getitem__, reverse=True):
        if same_shape and tp.meta[out.name].shape != tp.meta[value.name].shape:
            continue
        members = {out}
        _absorb_producers(members, low, assigned)
        if value.users and all(u in members for u in value.users):
            return members, out
    return set(), None


def _chain(value: fx.Node, low: dict[str, Lowered], assigned: set[fx.Node]) -> tuple[set[fx.Node], fx.Node | None]:
    """The straight chain of single-use elementwise consumers after ``value`` (a smaller epilogue)."""
    chain: set[fx.Node] = set()
    last = None
    while len(value.users) == 1:
        u = next(iter(value.users))
        lu = low.get(u.name)
        if u in assigned or lu is None or not lu.elementwise:
            break
        chain.add(u)
        last = value = u
    return chain, last


def _usable(template: Template, spec: GroupSpec) -> bool:
    """The template matches ``spec`` and renders it as valid Python (a template bug shows up here,
    and the group is retried smaller or left to torch, instead of sinking the whole candidate)."""
    try:
        if not template.match(spec):
            return False
        plan = template.render(spec, template.default_config(spec, "cuda"), "probe_launcher")
        compile(plan.source, "<template>", "exec")
        return True
    except Exception as exc:  # noqa: BLE001 - a template bug must not stop the expert
        log.warning("expert.template_unusable", template=template.name, error=repr(exc)[:300])
        return False


def _try_anchor(anchor: fx.Node, kind: str, tp: TracedProblem, low: dict[str, Lowered], order: dict[fx.Node, int],
                assigned: set[fx.Node], templates: list[Template], operand_prologue: bool = False) -> Group | None:
    lowered = low[anchor.name]
    head = [anchor]
    value = anchor
    if lowered.key in ("amax", "amin"):
        target = _fold_target(anchor, low)
        if target is None:
            return None  # the indices are used too: stays torch
        head, value = [anchor, target], target
    epilogues = [_epilogue_group(value, low, assigned, tp, order, same_shape=kind == "matmul")]
    chain = _chain(value, low, assigned)
    if kind == "matmul" and chain[1] is not None and tp.meta[chain[1].name].shape != tp.meta[value.name].shape:
        chain = (set(), None)
    epilogues += [chain, (set(), None)]
    shared = kind != "matmul" and any(getattr(t, "writes_prologue_outputs", False) for t in templates)
    options: list[tuple[set[fx.Node], set[fx.Node], fx.Node | None, list[fx.Node]]] = []
    b_prologue = right_operand_prologue(anchor, low, assigned) if kind == "matmul" and operand_prologue else set()
    for epi, out in epilogues:
        prologue: set[fx.Node] = set(b_prologue)
        if kind != "matmul":
            prologue = set(head)
            _absorb_producers(prologue, low, assigned | epi)
            if shared:
                wider = set(prologue)
                extra = shared_prologue(wider, head, low, assigned | epi, tp, order, out or value)
                if extra:
                    options.append((wider - set(head), epi, out, extra))
            prologue -= set(head)
        options.append((prologue, epi, out, []))
        if kind != "matmul":
            same = full_shape_prologue(prologue, head, epi, low, tp)
            if same and same != prologue:  # small broadcast operands (a [S, S] mask) stay outside
                options.append((same, epi, out, []))
        options.append((set(), epi, out, []))
    tried: set[frozenset[fx.Node]] = set()
    for pro, epi, out, extra in options:
        members_set = frozenset(pro | set(head) | epi)
        if members_set in tried:
            continue
        tried.add(members_set)
        members = sorted(members_set, key=order.__getitem__)
        output = out if out is not None else value
        spec, sources = build_spec(members, output, kind, anchor, tp, low, extra)
        for template in templates:
            if extra and not getattr(template, "writes_prologue_outputs", False):
                continue  # it would compute the extra outputs without writing them
            if _usable(template, spec):
                return Group(members=members, output=output, kind=kind, anchor=anchor, template=template,
                             spec=spec, sources=sources, extra_outputs=extra)
    return None


def _why_not_alone(anchor: fx.Node, kind: str, tp: TracedProblem, low: dict[str, Lowered],
                   templates: list[Template]) -> str:
    """`` (<why>)`` for a matmul no template takes: what the matmul template says about it alone."""
    if kind != "matmul":
        return ""
    spec, _ = build_spec([anchor], anchor, kind, anchor, tp, low)
    for template in templates:
        why_not = getattr(template, "why_not", None)
        if not template.name.startswith("matmul") or why_not is None:
            continue
        try:
            reason = why_not(spec)
        except Exception as exc:  # noqa: BLE001 - an explanation only
            log.debug("expert.why_not_failed", template=template.name, error=repr(exc)[:200])
            continue
        if reason:
            return f" ({reason})"
    return ""


def partition(tp: TracedProblem, low: dict[str, Lowered], templates: list[Template], *,
              matmul: bool, anchors: bool = True, operand_prologue: bool = False) -> Partition:
    """Fusion groups of the graph; ``matmul``: also Triton matmul (+ epilogue) groups, built with
    the first matmul template in ``templates`` that matches (callers order them by precision);
    ``operand_prologue``: a matmul group also takes the elementwise producers of its right operand
    (a weight's dequantisation) when the template matches them."""
    nodes = list(tp.gm.graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    assigned: set[fx.Node] = set()
    result = Partition()
    for node in nodes:
        lowered = low.get(node.name)
        if lowered is None or node in assigned:
            continue
        kind = ("scatter" if lowered.key in SCATTER_KEYS else FOLDED_KINDS.get(lowered.key)
                or (ANCHOR_KINDS.get(lowered.op_class) if lowered.op_class else None))
        if kind is None:
            continue
        if kind == "matmul" and not (matmul and lowered.key in MATMUL_KEYS):
            continue
        if kind not in ("matmul", *FOLDED_KINDS.values()) and not anchors:
            continue
        fitting = [t for t in templates if t.name != "elementwise"]
        group = _try_anchor(node, kind, tp, low, order, assigned, fitting, operand_prologue)
        if group is None:
            why = _why_not_alone(node, kind, tp, low, fitting)
            result.declined.append(f"{lowered.key} ({node.name}): no template matches{why}; it stays a torch call")
            continue
        assigned.update(group.members)
        result.groups.append(group)
    elementwise = [t for t in templates if t.name == "elementwise"]
    for node in reversed(nodes):
        lowered = low.get(node.name)
        if node in assigned or lowered is None or not lowered.elementwise:
            continue
        members = {node}
        _absorb_producers(members, low, assigned)
        ordered = sorted(members, key=order.__getitem__)
        if all(low[m.name].key in _IDENTITY_OPS for m in ordered):
            continue  # a lone no-op (dropout(p=0), clone): nothing to gain from a kernel
        spec, sources = build_spec(ordered, node, "elementwise_chain", None, tp, low)
        template = next((t for t in elementwise if t.match(spec)), None)
        if template is None:
            continue
        assigned.update(members)
        result.groups.append(Group(members=ordered, output=node, kind="elementwise_chain", anchor=None,
                                   template=template, spec=spec, sources=sources))
    _merge_chains(result, tp, low, order, elementwise)
    result.groups.sort(key=lambda g: order[g.output])
    return result


def _merge_chains(result: Partition, tp: TracedProblem, low: dict[str, Lowered], order: dict[fx.Node, int],
                  elementwise: list[Template]) -> None:
    """Merge an elementwise chain into the chain that consumes its output, when both write the
    same shape: one kernel reads every input once and writes both values (AdamW's new exp_avg,
    exp_avg_sq and param: one pass instead of three kernels re-reading the moments)."""
    changed = True
    while changed:
        changed = False
        chains = [g for g in result.groups if g.kind == "elementwise_chain"]
        for consumer in chains:
            for producer in chains:
                if producer is consumer or not any(
                        u in consumer.members for o in (producer.output, *producer.extra_outputs) for u in o.users):
                    continue
                merged = _merged(producer, consumer, tp, low, order, elementwise)
                if merged is not None:
                    result.groups = [g for g in result.groups if g is not producer and g is not consumer] + [merged]
                    changed = True
                    break
            if changed:
                break


def _merged(producer: Group, consumer: Group, tp: TracedProblem, low: dict[str, Lowered],
            order: dict[fx.Node, int], elementwise: list[Template]) -> Group | None:
    members_set = set(producer.members) | set(consumer.members)
    shape = tp.meta[consumer.output.name].shape
    candidates = [producer.output, *producer.extra_outputs, *consumer.extra_outputs]
    if any(tp.meta[o.name].shape != shape for o in candidates):
        return None  # the kernel writes every output at the main output's flat index
    extra = [o for o in candidates if any(u not in members_set for u in o.users)]
    # the merged launcher runs where the consumer's output was computed: every outside reader of
    # an extra output must come later (this also rules out a cycle through a torch op)
    if any(order[u] <= order[consumer.output] for o in extra for u in o.users if u not in members_set):
        return None
    members = sorted(members_set, key=order.__getitem__)
    spec, sources = build_spec(members, consumer.output, "elementwise_chain", None, tp, low, extra)
    template = next((t for t in elementwise if t.match(spec)), None)
    if template is None:
        return None
    return Group(members=members, output=consumer.output, kind="elementwise_chain", anchor=None, template=template,
                 spec=spec, sources=sources, extra_outputs=extra)
