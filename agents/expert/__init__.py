"""Expert agents: real kernels from templates and tuning rules, with no LLM at all.

``build_expert_agents(config)`` is what :mod:`agents.factory` calls: one designer for stage 1 and
one tuner per stage-2 focus. The codegen behind them is :mod:`agents.expert.codegen`; the kernel
templates live in :mod:`agents.expert.kernels`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from egg.vocabulary import Focus

if TYPE_CHECKING:
    from agents.protocol import Agent
    from egg.config import RunConfig

__all__ = ["ExpertDesigner", "ExpertTuner", "build_expert_agents"]


def build_expert_agents(config: RunConfig) -> tuple[list[Agent], dict[Focus, list[Agent]]]:
    """(designers, tuners by focus) for a run; device and backend come from ``config``."""
    from agents.expert.agents import ExpertDesigner, ExpertTuner

    device, backend = config.device, config.backend
    shape_set = traced_shape_set(config.shapes)
    designers: list[Agent] = [ExpertDesigner(device=device, backend=backend, shape_set=shape_set)]
    tuners: dict[Focus, list[Agent]] = {
        focus: [ExpertTuner(focus, device=device, backend=backend, shape_set=shape_set)]
        for focus in (Focus.PARALLEL_MAPPING, Focus.TILING, Focus.MEMORY)
    }
    return designers, tuners


def traced_shape_set(shapes: str | None) -> str:
    """The shape set the expert traces: the first one a run checks (and times)."""
    if not shapes or shapes == "all":
        return "default"
    return next((s.strip() for s in shapes.split(",") if s.strip()), "default")


def __getattr__(name: str) -> object:
    if name in ("ExpertDesigner", "ExpertTuner"):
        from agents.expert import agents as _agents

        return getattr(_agents, name)
    raise AttributeError(name)
