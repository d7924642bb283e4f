"""Warm torch.compile's on-disk caches for a list of problems before a timed sweep.

The harness compiles each problem's reference with ``torch.compile`` (default mode) in its worker
and times it side by side with eager and the candidate. Compiling is CPU work of tens of seconds
per problem; the GPU sits idle meanwhile. This script compiles every reference once, many
problems at a time, so the sweep's own compile of the same graph hits Inductor's FX-graph and
Triton caches. Nothing here is timed, and it must finish before timing starts (it runs the
compiled graphs once on the GPUs).

    python benchmarks/warm_compile.py --jobs 16 PROBLEM.py [PROBLEM.py ...]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _warm(path: str, gpu: int) -> str:
    import torch

    from egg.evaluate.correctness import to_device
    from egg.problem import inspect_problem, load_problem_module

    t0 = time.monotonic()
    device = torch.device("cuda", gpu) if torch.cuda.is_available() else torch.device("cpu")
    info = inspect_problem(path)
    overrides = info.shape_sets.get("default", {}) if info.shape_sets else {}
    problem = load_problem_module(path, overrides)
    torch.manual_seed(0)
    with torch.cuda.device(device) if device.type == "cuda" else _null():
        model = problem.Model(*problem.get_init_inputs()).to(device)
        with torch.device(device):  # as the harness draws them (egg/evaluate/reference.py Reference.inputs)
            inputs = to_device(problem.get_inputs(), device)
        torch.compile(model)(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    return f"{Path(path).name}: {time.monotonic() - t0:.1f} s"


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    args = parser.parse_args()
    import torch

    gpus = max(1, torch.cuda.device_count())
    t0 = time.monotonic()
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(args.jobs, mp_context=ctx) as pool:
        futures = {pool.submit(_warm, p, i % gpus): p for i, p in enumerate(args.problems)}
        for fut in cf.as_completed(futures):
            try:
                sys.stdout.write(fut.result() + "\n")
            except Exception as exc:  # noqa: BLE001 - a reference compile cannot handle is the harness's note to make
                sys.stdout.write(f"{Path(futures[fut]).name}: failed: {type(exc).__name__}: {str(exc)[:200]}\n")
            sys.stdout.flush()
    sys.stdout.write(f"warmed {len(args.problems)} problems in {time.monotonic() - t0:.1f} s\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
