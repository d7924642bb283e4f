"""What the expert agents do with the packs' decisions for one problem (``egg principles explain``).

Not a description of the decisions (``Decisions.explain`` is that) but of their effect: the
variants the designer offers and in which order, the values the tuner tries where a pack changed
them, and the principles the default candidate's kernels credit (constants they were rendered
with), each with the principle behind it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agents.expert.choices import choices_for
from agents.expert.decline import ExpertDecline
from agents.expert.design import analyse, render
from agents.expert.templates import template_for

if TYPE_CHECKING:
    from principles import Decisions


def expert_plan(problem_path: str | Path, shape_set: str, decisions: Decisions, kind: str) -> list[str]:
    """One line per effect of ``decisions`` on the expert agents (``kind``: the heuristics, cpu/cuda)."""
    choices = choices_for(kind, decisions)
    try:
        program = analyse(problem_path, shape_set, choices.target)
    except ExpertDecline as exc:
        return [f"the expert declines this problem: {exc}"]
    offers = choices.offers(program)
    lines = [f"designer offers, in order: {', '.join(o.variant.id for o in offers) or 'nothing'}"]
    for o in offers:
        if o.principle_ids:
            lines.append(f"  {o.variant.id}: placed by [{', '.join(o.principle_ids)}]")
    for v in program.variants:
        if not choices.enabled(v.id):
            setting = decisions.variants[v.id].enabled
            lines.append(f"  {v.id}: not offered (switched off)  [{setting.principle if setting else '?'}]")
    if not offers:
        return lines
    first = offers[0]
    for kernel in first.variant.program.kernels:
        template = (first.pick or template_for)(kernel)
        space, by = choices.space(template, kernel)
        for param, deciders in by.items():
            if deciders:
                lines.append(f"tuner tries {kernel.name} ({template.name}) {param} in {space[param]}  "
                             f"[{', '.join(deciders)}]")
    c = render(program, first.variant, choices.target, pick=first.pick, principles=first.principle_ids)
    changed = {n for n, d in decisions.constants.items() if d.decided_by != d.default_by or d.value != d.default}
    credited = [p for p in c.principle_ids if any(decisions.constants[n].decided_by == p for n in changed)]
    if credited:
        lines.append(f"{first.variant.id} rendered with constants decided by [{', '.join(dict.fromkeys(credited))}]")
    lines.append(f"{first.variant.id} credits: {', '.join(c.principle_ids) or 'no principle'}")
    return lines
