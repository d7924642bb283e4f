"""Principle packs: expert knowledge about fast kernels as versioned, pluggable data.

Typical use (what ``egg prompt`` and the agents do)::

    from principles import load_packs, retrieve, render_principles

    packs = load_packs(["./my-pack"])                    # built-ins + entry points + paths
    chosen = retrieve(packs, stage="hardware_tuning", focus="memory",
                      op_classes=["reduction"], bottleneck="memory", token_budget=1200)
    text = render_principles(chosen)                     # bullets starting with [id]
    report_field = [v.model_dump() for v in packs.versions()]

    decisions = decide(packs, Facts.from_analysis(analysis, device_facts()))   # machine-readable
    space, by = decisions.space("reduction", {"num_warps": [2, 4, 8]})        # values + principle ids

See ``principles/README.md`` for the pack format.
"""

from principles.decide import Decisions, Facts, decide, device_table
from principles.decisions import TEMPLATE_CONTRACT, Constant, Decision, KernelTemplate
from principles.discovery import (
    BUILTIN_DIR,
    ENTRY_POINT_GROUP,
    builtin_pack_paths,
    entry_point_pack_paths,
    load_packs,
)
from principles.loader import LoadedPack, load_pack
from principles.packset import Entry, PackSet, PackVersion
from principles.render import render_principle, render_principles
from principles.retrieval import (
    DEFAULT_TOKEN_BUDGET,
    Ranked,
    estimate_tokens,
    principle_tokens,
    rank,
    retrieve,
)
from principles.schema import Pack, Principle, Template, TemplateParameter, TuningSpace
from principles.templates import import_template, load_kernel_template

__all__ = [
    "BUILTIN_DIR",
    "Constant",
    "Decision",
    "Decisions",
    "Facts",
    "KernelTemplate",
    "TEMPLATE_CONTRACT",
    "decide",
    "device_table",
    "load_kernel_template",
    "DEFAULT_TOKEN_BUDGET",
    "ENTRY_POINT_GROUP",
    "Entry",
    "LoadedPack",
    "Pack",
    "PackSet",
    "PackVersion",
    "Principle",
    "Ranked",
    "Template",
    "TemplateParameter",
    "TuningSpace",
    "builtin_pack_paths",
    "entry_point_pack_paths",
    "estimate_tokens",
    "import_template",
    "load_pack",
    "load_packs",
    "principle_tokens",
    "rank",
    "render_principle",
    "render_principles",
    "retrieve",
]
