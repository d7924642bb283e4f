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

NVTX_RANGE = "egg-candidate"
WARMUP_CALLS = 3


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m egg.profile.target")
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("--shape-set", default="default")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    from egg.evaluate.correctness import to_device
    from egg.live import bind_parameters
    from egg.problem import import_file, inspect_problem, load_problem_module

    if not torch.cuda.is_available():
        sys.stderr.write("egg.profile.target: no CUDA device\n")
        return 2
    device = torch.device("cuda")
    overrides = inspect_problem(args.problem).shape_sets[args.shape_set]
    problem = load_problem_module(args.problem, overrides)
    candidate = import_file(args.candidate, "egg_profiled")
    torch.manual_seed(args.seed)
    init_inputs = problem.get_init_inputs()
    torch.manual_seed(args.seed)
    model = candidate.ModelNew(*init_inputs).to(device)
    if getattr(problem, "BIND_PARAMETERS", False):
        torch.manual_seed(args.seed)
        bind_parameters(model, problem.Model(*init_inputs).to(device))
    torch.manual_seed(args.seed + 1)
    inputs = to_device(problem.get_inputs(), device)
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
