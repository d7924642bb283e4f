"""Executor throughput: candidates per minute with parallel compilation against serial, and the
per-candidate costs (compile/load, verify, time) from each verdict's ``phase_s``.

Each mode opens the local executor with ``--workers`` judges per GPU (``1`` = serial: one
candidate at a time per GPU; ``2`` = one candidate's runner start, imports and Triton/CUDA
compilation overlap another's GPU phases; timing stays exclusive per GPU) and evaluates the same
set of distinct honest Triton candidates (variants of ``tests/fixtures/candidates/add_relu_triton.py``
with their own block size and a unique kernel source, so every one is compiled: Triton's cache is
a fresh directory per mode) from as many caller threads as the executor has workers. Judges are
warmed first (judge and zygote start, the reference's torch.compile), untimed, and reported.

The projection for N GPUs assumes what the executor does: GPUs are independent (one judge set
each, pinned with CUDA_VISIBLE_DEVICES) and the caller's own work (static checks, archives) is
small; it is N times the measured single-GPU rate. It is an
estimate from these measurements, not a multi-GPU measurement.

    python benchmarks/executor_throughput.py --out executor_throughput.json [--candidates 12] [--modes 1,2]
    python benchmarks/executor_throughput.py --out smoke.json --device cpu --candidates 3   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from egg.evaluate import EvalOptions, Harness  # noqa: E402
from egg.executor.spread import map_ordered  # noqa: E402
from egg.logging import configure_logging  # noqa: E402

FIX = ROOT / "tests" / "fixtures"
TEMPLATE = FIX / "candidates" / "add_relu_triton.py"
PROBLEMS = {"cuda": FIX / "problems" / "add_relu_large.py", "cpu": FIX / "problems" / "add_relu.py"}
BLOCKS = (256, 512, 1024, 2048)
# Phases as the judge names them, grouped as the issue asks: compile (runner start, load: imports and
# CUDA builds, and the first call, where Triton compiles), verify (the other trial calls, ablation),
# time (timing, GPU-time profile). "first_call" lies inside "trials", so it is subtracted there.
GROUPS = {"compile": ("runner_start", "load", "first_call"), "verify": ("trials", "ablation"),
          "time": ("timing", "profile")}


def grouped_costs(median_phase: dict[str, float]) -> dict[str, float]:
    costs = {g: sum(median_phase.get(k, 0.0) for k in keys) for g, keys in GROUPS.items()}
    costs["verify"] -= median_phase.get("first_call", 0.0)
    costs["gpu_wait"] = median_phase.get("gpu_wait", 0.0)
    return costs


def write_candidates(folder: Path, count: int, tag: str) -> list[Path]:
    text = TEMPLATE.read_text()
    paths = []
    for i in range(count):
        block = BLOCKS[i % len(BLOCKS)]
        variant = text.replace("    pid = tl.program_id(0)\n", f"    pid = tl.program_id(0)  # variant {tag}-{i}\n", 1)
        variant = variant.replace("1024", str(block))
        path = folder / f"cand_{tag}_{i:03d}.py"
        path.write_text(variant)
        paths.append(path)
    return paths


def run_mode(device: str, workers: int, count: int, options: EvalOptions, tmp: Path) -> dict:
    os.environ["TRITON_CACHE_DIR"] = str(tmp / f"triton-cache-w{workers}")  # nothing compiled before
    problem = PROBLEMS[device]
    candidates = write_candidates(tmp, count, f"w{workers}")
    with Harness(device, workers=workers) as harness:
        width = harness.capacity
        warm = write_candidates(tmp, width, f"warm{workers}")
        t0 = time.perf_counter()
        warm_verdicts = map_ordered(lambda c: harness.evaluate(problem, c, options, tmp / f"a-{c.stem}"), warm, width)
        warm_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        verdicts = map_ordered(lambda c: harness.evaluate(problem, c, options, tmp / f"a-{c.stem}"), candidates, width)
        wall = time.perf_counter() - t0
    rows = [{"candidate": c.name, "accepted": v.accepted, "stage_failed": v.stage_failed, "wall_s": v.wall_s,
             "phase_s": v.phase_s, "candidate_ms": v.candidate_ms, "worker": v.worker} for c, v in zip(candidates, verdicts)]
    phases = sorted({k for r in rows for k in r["phase_s"]})
    median_phase = {k: statistics.median(r["phase_s"].get(k, 0.0) for r in rows) for k in phases}
    grouped = grouped_costs(median_phase)
    return {"workers_per_gpu": workers, "concurrent_evaluations": width, "candidates": count,
            "accepted": sum(r["accepted"] for r in rows), "warm_up_s": warm_s,
            "warm_up_accepted": sum(v.accepted for v in warm_verdicts), "wall_s": wall,
            "candidates_per_min": 60.0 * count / wall, "median_candidate_wall_s": statistics.median(r["wall_s"] for r in rows),
            "median_phase_s": median_phase, "median_cost_s": grouped, "rows": rows}


def projection(best: dict, serial: dict, gpus: list[int]) -> dict:
    """Expected candidates/min on N GPUs from one GPU's measurement (see the module docstring)."""
    per_gpu = best["candidates_per_min"]
    exclusive = best["median_cost_s"]["time"]  # the phases no two candidates share on one GPU
    bound = 60.0 / exclusive if exclusive else None
    return {"per_gpu_measured": per_gpu, "per_gpu_bound_by_exclusive_timing": bound,
            "serial_per_gpu_measured": serial["candidates_per_min"],
            "expected": {str(n): per_gpu * n for n in gpus}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--candidates", type=int, default=12, help="distinct candidates per mode")
    parser.add_argument("--modes", default="1,2", help="judges per GPU to compare (1 = serial)")
    args = parser.parse_args()
    configure_logging(level=os.environ.get("EGG_LOG_LEVEL", "warning"))  # info: phase times on stderr
    import torch

    modes = [int(m) for m in args.modes.split(",")]
    options = EvalOptions(device=args.device, shapes=None if args.device == "cuda" else "default",
                          trials=5 if args.device == "cuda" else 2, seed=11)
    results = {}
    with tempfile.TemporaryDirectory(prefix="egg-throughput-") as tmp:
        for workers in modes:
            results[str(workers)] = run_mode(args.device, workers, args.candidates, options, Path(tmp))
            r = results[str(workers)]
            print(f"workers/GPU {workers}: {r['candidates_per_min']:.1f} candidates/min ({r['accepted']}/{r['candidates']} "
                  f"accepted, {r['wall_s']:.1f} s); median costs s: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in r["median_cost_s"].items()), flush=True)
    serial = results[str(min(modes))]
    best = max(results.values(), key=lambda r: r["candidates_per_min"])
    out = {
        "benchmark": "executor_throughput",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "machine": {"gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
                    "gpus_visible": torch.cuda.device_count() if args.device == "cuda" else 0,
                    "torch": torch.__version__, "python": platform.python_version(), "cpus": os.cpu_count()},
        "problem": str(PROBLEMS[args.device].relative_to(ROOT)),
        "modes": results,
        "parallel_vs_serial": best["candidates_per_min"] / serial["candidates_per_min"],
        "projection_candidates_per_min": projection(best, serial, [1, 2, 4, 8]),
    }
    args.out.write_text(json.dumps(out, indent=2))
    print(f"parallel vs serial: {out['parallel_vs_serial']:.2f}x; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
