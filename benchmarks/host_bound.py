"""Is a candidate slow on the GPU or on the host? Eager, torch.compile and a candidate file, each
called back to back on one problem's inputs (GPU only):

* ``event_ms``: CUDA-event time per call over ``--calls`` back-to-back calls (what a user's loop sees);
* ``host_ms``: host time to *issue* one call (perf_counter over the same loop, synchronised once
  at the end, divided by the calls); when it is about ``event_ms`` the GPU waits on the host;
* ``kernel_ms``: GPU kernel time per call from torch.profiler (every CUDA kernel and memcpy/memset);
* ``launches``: kernels per call;
* ``kernels`` (``--kernels N``): the N kernels with the most GPU time, each with its ms and launches
  per call, from the same profile: where a candidate loses to torch.compile, kernel against kernel
  (KernelBench level 2 #11 ran at 0.84x of it on an H100, 2026-12-05, and the verdicts had no split).

``event_ms - kernel_ms`` is the idle GPU time per call; a host-bound candidate needs fewer launches
or cheaper launchers, not a better kernel. ``--profile N`` adds the candidate's N most expensive
Python functions (cProfile, cumulative time per call) to find where its host time goes. The evaluator's timings (L2 flushed before every call)
differ from ``event_ms``; this script explains them, it does not replace them.

    python benchmarks/host_bound.py --problem workloads/adamw_step.py --candidate RUN_DIR/best.py [...] --out X.json
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import platform
import pstats
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from egg.problem import import_file, load_problem_module  # noqa: E402


def measure(fn: Any, inputs: list[Any], calls: int, kernels: int = 0) -> dict[str, Any]:
    for _ in range(10):
        fn(*inputs)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    for _ in range(calls):
        fn(*inputs)
    end.record()
    host = (time.perf_counter() - t0) / calls
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fn(*inputs)
        torch.cuda.synchronize()
    launches = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    averages = prof.key_averages()
    device_us = sum(k.self_device_time_total for k in averages)  # the profiler table's "Self CUDA total"
    row: dict[str, Any] = {"event_ms": start.elapsed_time(end) / calls, "host_ms": host * 1e3,
                           "kernel_ms": device_us / 20 / 1e3, "launches": launches / 20}
    if kernels:
        timed = sorted((k for k in averages if k.self_device_time_total > 0), key=lambda k: -k.self_device_time_total)
        row["kernels"] = [{"kernel": k.key[:160], "ms": k.self_device_time_total / 20 / 1e3, "launches": k.count / 20}
                          for k in timed[:kernels]]
    return row


def host_profile(fn: Any, inputs: list[Any], calls: int, top: int) -> list[dict[str, Any]]:
    """The ``top`` functions by cumulative host time per call of ``fn`` (cProfile)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn(*inputs)
    profiler.disable()
    torch.cuda.synchronize()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    rows = []
    for (file, line, name), (_, ncalls, _, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}({name})", "calls_per_call": ncalls / calls,
                     "cum_us_per_call": cumtime / calls * 1e6})
    return sorted(rows, key=lambda r: -r["cum_us_per_call"])[:top]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", action="append", required=True, help="problem file (repeatable)")
    parser.add_argument("--candidate", action="append", required=True, help="candidate file, one per --problem")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--profile", type=int, default=0, help="also list the candidate's N costliest functions")
    parser.add_argument("--kernels", type=int, default=0, help="also list each callable's N costliest GPU kernels")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if len(args.problem) != len(args.candidate):
        parser.error("give one --candidate per --problem")
    rows = []
    for problem_path, candidate_path in zip(args.problem, args.candidate):
        problem = load_problem_module(problem_path)
        candidate = import_file(candidate_path, "host_bound_candidate")
        torch.manual_seed(0)
        init = problem.get_init_inputs()
        eager = problem.Model(*init).cuda()
        torch.manual_seed(0)
        new = candidate.ModelNew(*init).cuda()
        with torch.device("cuda"):
            inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in problem.get_inputs()]
        row: dict[str, Any] = {"problem": Path(problem_path).stem}
        for name, fn in (("eager", eager), ("compile", torch.compile(eager)), ("candidate", new)):
            try:
                with torch.no_grad():
                    row[name] = measure(fn, inputs, args.calls, args.kernels)
            except Exception as exc:  # noqa: BLE001 - one failure must not lose the other rows
                row[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        if args.profile:
            with torch.no_grad():
                row["candidate_profile"] = host_profile(new, inputs, args.calls, args.profile)
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps({
        "benchmark": "host_bound", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv), "machine": {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                                                  "python": platform.python_version()},
        "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
