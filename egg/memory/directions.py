"""What move a candidate made: a global *direction* and the local *strategy* under it (after HTAM).

A direction is coarse and shared by every problem: a stage, a focus and a name ("fuse the
epilogue into a Triton matmul", "retile for tensor cores", "cut memory traffic"). A strategy is
the concrete thing done under it: a structural variant (``variant triton-matmul``), one tuning
value (``matmul.BLOCK_N=128``), or for an LLM's free-form code the principles it says it applied.
Strategies are recorded per problem kind (op classes, bottleneck, pattern families), so what
worked on last week's RMSNorms is retrieved for today's.

Expert candidates say what they are in their ``# EGG-EXPERT-CONFIG: {...}`` header (variant and
each kernel's template and config); a tuning move is the difference between a candidate's
configs and its parent's. Anything else (an LLM's candidate) is classified by stage and focus.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

START = "start"  # the "direction" a stage-1 candidate moves from: the reference itself
CONFIG_TAG = "# EGG-EXPERT-CONFIG: "

# (stage, focus, name) -> what the direction means; the vocabulary `egg memory show` prints.
DIRECTIONS: dict[tuple[str, str, str], str] = {
    ("algorithm_design", "structure", "fuse around library calls"):
        "matmuls, convolutions and attention stay library calls; everything around them is fused",
    ("algorithm_design", "structure", "fuse the epilogue into a Triton matmul"):
        "the matmul becomes a Triton template with its operand prologues and pointwise epilogue fused",
    ("algorithm_design", "structure", "fuse less"):
        "a fallback structure: reductions in kernels of their own, for accuracy or registers",
    ("algorithm_design", "structure", "restructure"):
        "a structure of the agent's own (an LLM's design)",
    ("hardware_tuning", "parallel_mapping", "remap work to programs"):
        "work per program and grid shape: rows per program, persistent grids, split rows or K",
    ("hardware_tuning", "tiling", "retile"):
        "block shapes, warps and stages of non-matmul kernels",
    ("hardware_tuning", "tiling", "retile for tensor cores"):
        "matmul tiles, warps and pipeline stages",
    ("hardware_tuning", "memory", "cut memory traffic"):
        "access patterns, caching hints, fewer bytes moved",
}
_VARIANT_DIRECTIONS = {"fused": "fuse around library calls", "less-fused": "fuse less", "chains-only": "fuse less"}
_TUNING_DIRECTIONS = {"parallel_mapping": "remap work to programs", "tiling": "retile", "memory": "cut memory traffic"}
_MATMUL_TEMPLATES = {"matmul", "triton-matmul"}


class Move(BaseModel):
    direction: str
    strategy: str


def config_strategy(changes: Iterable[tuple[str, str, Any]]) -> str:
    """The memory's name for a config change: ``template.PARAM=value`` per (template, param, value),
    sorted and joined by ", " (``matmul.BLOCK_M=128, matmul.num_warps=8``); "" for no change."""
    return ", ".join(sorted({f"{template}.{param}={json.dumps(value)}" for template, param, value in changes}))


def parse_config_strategy(strategy: str) -> list[tuple[str, str, Any]] | None:
    """``[(template, param, value)]`` of a :func:`config_strategy` name, or None for any other
    strategy (a variant, an LLM's principles, "no config change")."""
    changes: list[tuple[str, str, Any]] = []
    for part in strategy.split(", "):
        name, eq, raw = part.partition("=")
        template, dot, param = name.rpartition(".")
        if not (eq and dot and template and param) or " " in name:
            return None
        try:
            changes.append((template, param, json.loads(raw)))
        except ValueError:
            return None
    return changes or None


def read_header(source: str) -> dict[str, Any] | None:
    """The expert's config block (variant, kernels with template and config), or None."""
    for line in source.splitlines()[:80]:
        if line.startswith(CONFIG_TAG):
            try:
                data = json.loads(line[len(CONFIG_TAG):])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _kernels(header: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """kernel (or launcher) name -> (template, config); tolerant of both header versions."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for k in header.get("kernels") or []:
        if isinstance(k, dict):
            name = str(k.get("kernel") or k.get("launcher") or len(out))
            out[name] = (str(k.get("template", "?")), dict(k.get("config") or {}))
    return out


def _principles(principle_ids: list[str]) -> str:
    return "llm: " + (", ".join(sorted(set(principle_ids))) if principle_ids else "no principle cited")


def classify(stage: str, focus: str, source: str, parent_source: str | None = None,
             principle_ids: list[str] | None = None) -> Move:
    """The direction and strategy of a candidate (see the module docstring)."""
    header = read_header(source)
    ids = list(principle_ids or [])
    if stage == "algorithm_design":
        if header is None:
            return Move(direction="restructure", strategy=_principles(ids))
        variant = str(header.get("variant", "?"))
        direction = _VARIANT_DIRECTIONS.get(variant) or (
            "fuse the epilogue into a Triton matmul" if variant.startswith("triton-matmul") else "restructure")
        return Move(direction=direction, strategy=f"variant {variant}")
    parent = read_header(parent_source) if parent_source else None
    if header is None or parent is None:
        return Move(direction=_TUNING_DIRECTIONS.get(focus, "retile"), strategy=_principles(ids))
    mine, theirs = _kernels(header), _kernels(parent)
    changes = []
    for name, (template, config) in mine.items():
        before = theirs.get(name, (template, {}))[1]
        changes += [(template, param, value) for param, value in config.items() if before.get(param) != value]
    templates = {template for template, _, _ in changes}
    direction = _TUNING_DIRECTIONS.get(focus, "retile")
    if direction == "retile" and templates and templates <= _MATMUL_TEMPLATES:
        direction = "retile for tensor cores"
    return Move(direction=direction, strategy=config_strategy(changes) or "no config change")
