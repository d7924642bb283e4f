"""Expert agents: kernels from the loop-level IR and jinja2 templates, with no LLM at all.

``design_candidates(problem_path, shape_set, device)`` is the codegen (contract section 4: one
:class:`ExpertCandidate` per structural variant, the default ``fused`` first, or
:class:`ExpertDecline` with a one-line reason); ``build_expert_agents(config)`` is what
:mod:`agents.factory` calls: one designer for stage 1 and one tuner per stage-2 focus. The design
is in ``agents/expert/README.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.expert.decline import ExpertDecline
from egg.vocabulary import Focus

if TYPE_CHECKING:
    from agents.protocol import Agent
    from egg.config import RunConfig

__all__ = ["ExpertCandidate", "ExpertDecline", "ExpertDesigner", "ExpertTuner", "build_expert_agents",
           "design_candidates"]


def build_expert_agents(config: RunConfig) -> tuple[list[Agent], dict[Focus, list[Agent]]]:
    """(designers, tuners by focus) for a run; device and backend come from ``config``."""
    from agents.expert.agents import ExpertDesigner
    from agents.expert.tuner import ExpertTuner

    device, backend = config.device, config.backend
    shape_set = traced_shape_set(config.shapes)
    designers: list[Agent] = [ExpertDesigner(device=device, backend=backend, shape_set=shape_set,
                                             rounds=config.budget.stage1_rounds)]
    tuners: dict[Focus, list[Agent]] = {
        focus: [ExpertTuner(focus, device=device, backend=backend, shape_set=shape_set)]
        for focus in (Focus.PARALLEL_MAPPING, Focus.TILING, Focus.MEMORY)
    }
    return designers, tuners


def traced_shape_set(shapes: str | None) -> str:
    """The shape set the expert specialises to: the first one a run checks (and times)."""
    if not shapes or shapes == "all":
        return "default"
    return next((s.strip() for s in shapes.split(",") if s.strip()), "default")


def __getattr__(name: str) -> Any:
    if name == "ExpertDesigner":
        from agents.expert.agents import ExpertDesigner

        return ExpertDesigner
    if name == "ExpertTuner":
        from agents.expert.tuner import ExpertTuner

        return ExpertTuner
    if name in ("design_candidates", "ExpertCandidate"):
        from agents.expert import design as _design

        return getattr(_design, name)
    raise AttributeError(name)
