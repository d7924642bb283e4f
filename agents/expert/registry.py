"""The template registry: built-in templates plus every ``agents/expert/kernels/reduce_*.py``.

A reduction-family module registers its templates in a module-level ``TEMPLATES`` list. Those
modules are optional (and may be mid-development): one that fails to import is logged and
skipped, never fatal.
"""

from __future__ import annotations

import importlib
import pkgutil

import structlog

import agents.expert.kernels as kernels_pkg
from agents.expert.kernels.base import Template
from agents.expert.kernels.elementwise import ElementwiseTemplate
from agents.expert.kernels.matmul import TEMPLATES as MATMUL_TEMPLATES
from agents.expert.kernels.rotary import RotaryTemplate
from agents.expert.kernels.scatter import SetitemTemplate

log = structlog.get_logger(__name__)


def load_templates() -> list[Template]:
    # matmul: the ieee instance first (the one a plain matmul partition picks), then 3xTF32
    templates: list[Template] = [ElementwiseTemplate(), *MATMUL_TEMPLATES, RotaryTemplate(), SetitemTemplate()]
    for info in sorted(pkgutil.iter_modules(kernels_pkg.__path__), key=lambda i: i.name):
        if not info.name.startswith("reduce_"):
            continue
        try:
            module = importlib.import_module(f"{kernels_pkg.__name__}.{info.name}")
        except Exception as exc:  # noqa: BLE001 - an optional template family must not break the expert
            log.warning("expert.template_import_failed", module=info.name, error=repr(exc))
            continue
        found = list(getattr(module, "TEMPLATES", []) or [])
        templates.extend(t for t in found if all(hasattr(t, a) for a in ("name", "match", "render")))
    return templates


def template_named(templates: list[Template], name: str) -> Template | None:
    return next((t for t in templates if t.name == name), None)
