"""The process ``ncu`` profiles: one accepted candidate, one forward call inside an NVTX range.

``python -m egg.profile.target PROBLEM CANDIDATE --shape-set S --seed N`` builds the candidate the
way the judge does (seed, ``get_init_inputs()``, seed, ``ModelNew(...)``; the reference's weights
bound for a live-module problem), warms it up (compilation, autotuning) outside the range, then
runs one call inside the range ``egg-candidate`` that the profiler filters on, so input creation
and warm-up are never profiled. It is never part of the judge's verdict: it runs after the
verdict, in a process of its own, and what it measures is evidence for the agents, not a result.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

NVTX_RANGE = "egg-candidate"
WARMUP_CALLS = 3


def load(problem_path: str | Path, shape_set: str) -> ModuleType:
    """The problem module with ``shape_set``'s constants applied."""
    from egg.problem import inspect_problem, load_problem_module

    return load_problem_module(problem_path, inspect_problem(problem_path).shape_sets[shape_set])


def build_model(cls: type, problem: ModuleType, seed: int, device: torch.device) -> torch.nn.Module:
    """``cls`` (a candidate's ModelNew, or the problem's Model) built the way the judge builds a
    candidate: seed, ``get_init_inputs()``, seed, ``cls(...)``; for a live-module problem the
    reference's weights bound into it. Shared with the expert's config screen
    (:mod:`agents.expert.screen_process`), the other process that runs candidates outside the judge."""
    from egg.live import bind_parameters

    torch.manual_seed(seed)
    init_inputs = problem.get_init_inputs()
    torch.manual_seed(seed)
    model = cls(*init_inputs).to(device)
    if getattr(problem, "BIND_PARAMETERS", False) and cls is not problem.Model:
        torch.manual_seed(seed)
        bind_parameters(model, problem.Model(*init_inputs).to(device))
    return model


def draw_inputs(problem: ModuleType, seed: int, device: torch.device) -> list[Any]:
    """``get_inputs()`` under ``seed``, drawn on ``device`` itself as the judge draws them
    (KernelBench's multi-GB inputs drawn on the CPU and copied took ~10 s)."""
    from egg.evaluate.correctness import to_device

    torch.manual_seed(seed)
    with torch.device(device):
        made = to_device(problem.get_inputs(), device)
    return list(made) if isinstance(made, (tuple, list)) else [made]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m egg.profile.target")
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("--shape-set", default="default")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        sys.stderr.write("egg.profile.target: no CUDA device\n")
        return 2
    from egg.problem import import_file

    device = torch.device("cuda")
    problem = load(args.problem, args.shape_set)
    model = build_model(import_file(args.candidate, "egg_profiled").ModelNew, problem, args.seed, device)
    inputs = draw_inputs(problem, args.seed + 1, device)
    with torch.no_grad():
        for _ in range(WARMUP_CALLS):
            model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(NVTX_RANGE)
        model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
