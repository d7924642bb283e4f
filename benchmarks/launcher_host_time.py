"""Host time of an expert candidate's launchers, without a GPU: every Triton launch is a no-op.

``benchmarks/host_bound.py`` showed on the H200 that small workloads are host-bound: the kernels
finish before the Python that launches them does. This script measures the part of that Python
which is ours: the generated ``forward`` and launchers (shape arithmetic, views, allocations,
torch ops kept outside kernels), on CPU tensors of the production shapes, with every
``kernel[grid](...)`` replaced by a no-op. It does not measure Triton's own launch path, and a CPU
allocation of a large output costs more than the GPU's caching allocator, so the absolute numbers
are this machine's. The comparison between two candidates of the same workload is the point:

    python benchmarks/launcher_host_time.py --workload rms_norm --candidate OLD/best.py --candidate NEW.py

``--render`` re-renders each candidate with the current templates (same variant and kernel
configs, read from its EGG-EXPERT-CONFIG block) and times that version beside the original.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from agents.expert.design import analyse, read_config, render  # noqa: E402
from egg.problem import import_file, load_problem_module  # noqa: E402


class _NoLaunch:
    """Stands in for a @triton.jit kernel: ``kernel[grid](...)`` does nothing."""

    def __getitem__(self, grid: Any) -> Any:
        return lambda *args, **kwargs: None


def _stubbed(candidate_path: Path) -> Any:
    module = import_file(candidate_path, "launcher_time")
    for name in dir(module):
        if type(getattr(module, name)).__name__ in ("JITFunction", "InterpretedFunction"):
            setattr(module, name, _NoLaunch())
    return module


def time_forward(problem_path: Path, candidate_path: Path, calls: int) -> float:
    """Microseconds per ``ModelNew.forward`` call with launches stubbed (median of 5 batches)."""
    problem = load_problem_module(problem_path)
    module = _stubbed(candidate_path)
    torch.manual_seed(0)
    model = module.ModelNew(*problem.get_init_inputs())
    inputs = problem.get_inputs()
    batches = []
    with torch.no_grad():
        for _ in range(5):
            model(*inputs)
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls):
                model(*inputs)
            batches.append((time.perf_counter() - t0) / calls * 1e6)
    return sorted(batches)[2]


def rerender(problem_path: Path, candidate_path: Path, out: Path) -> Path:
    """The candidate re-rendered by the current templates with its own variant and configs."""
    config = read_config(candidate_path.read_text())
    if config is None:
        raise SystemExit(f"{candidate_path}: no EGG-EXPERT-CONFIG block (not an expert candidate)")
    program = analyse(problem_path, config.shape_set)
    rendered = render(program, program.variant(config.variant), config.device, config.by_kernel())
    out.write_text(rendered.source)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", action="append", required=True, help="workloads/NAME.py (repeatable)")
    parser.add_argument("--candidate", action="append", required=True, help="candidate file, one per --workload")
    parser.add_argument("--render", action="store_true", help="also time each candidate re-rendered now")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if len(args.workload) != len(args.candidate):
        parser.error("give one --candidate per --workload")
    rows = []
    for name, candidate in zip(args.workload, args.candidate):
        problem = ROOT / "workloads" / f"{name}.py"
        row: dict[str, Any] = {"workload": name, "candidate": candidate,
                               "us_per_call": time_forward(problem, Path(candidate), args.calls)}
        if args.render:
            fresh = rerender(problem, Path(candidate), Path(f"/tmp/launcher_time_{name}.py"))
            row["rerendered_us_per_call"] = time_forward(problem, fresh, args.calls)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps({
            "benchmark": "launcher_host_time", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv), "machine": {"cpu": platform.processor() or platform.machine(),
                                                      "torch": torch.__version__, "python": platform.python_version()},
            "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
