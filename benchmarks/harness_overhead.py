"""Harness overhead per candidate: wall seconds of an evaluation beyond its timed calls.

Evaluates a fixed set of candidates (honest Triton, honest CUDA C++, and rejected ones) against a
GPU-sized elementwise problem, each several times with one Harness (warm judge and zygote), and
reports per candidate: wall seconds, seconds inside timed calls (median x runs for eager,
torch.compile and the candidate), the difference (the harness's own cost: static checks, the
runner's fork and CUDA initialisation, correctness trials on every shape set, fresh inputs before
every timed call and their checks, null calls, ablation, the GPU-time profile, archive writes), and
the judge's seconds per phase (``runner_start`` is the fork from the zygote up to the runner's
hello, CUDA context included).

    python benchmarks/harness_overhead.py --out results.json [--repeats 3] [--device cuda]
"""

from __future__ import annotations

import argparse
import os
import json
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
from egg.logging import configure_logging  # noqa: E402

FIX = ROOT / "tests" / "fixtures"
PROBLEM = FIX / "problems" / "add_relu_large.py"
CANDIDATES = {
    "honest_triton": FIX / "candidates" / "add_relu_triton.py",
    "honest_cuda_load_inline": FIX / "candidates" / "gpu" / "cuda_add_relu.py",
    "wrong_values": FIX / "candidates" / "harness" / "wrong_values.py",
    "static_reject_try_fallback": FIX / "candidates" / "cheats" / "try_fallback.py",
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: a smoke run (interpreter)")
    parser.add_argument("--gpu-time-split", default="off", choices=["on", "off"],
                        help="off (default): as optimisation runs evaluate; on: as egg eval does (a profiler session)")
    args = parser.parse_args()
    configure_logging(level=os.environ.get("EGG_LOG_LEVEL", "warning"))  # info: phase times on stderr
    import torch

    rows = []
    device = args.device
    shapes = None if device == "cuda" else "small"
    split = args.gpu_time_split == "on"
    with Harness(device) as harness, tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        first = harness.evaluate(PROBLEM, CANDIDATES["honest_triton"], EvalOptions(device=device, shapes=shapes, gpu_time_split=split),
                                 Path(tmp) / "warm")
        cold_s = time.perf_counter() - t0
        for name, path in CANDIDATES.items():
            for i in range(args.repeats):
                v = harness.evaluate(PROBLEM, path, EvalOptions(device=device, seed=i, shapes=shapes, gpu_time_split=split),
                                     Path(tmp) / f"{name}-{i}")
                timed = sum(s.median_ms * s.runs for s in v.timing.values()) / 1e3
                rows.append({"candidate": name, "repeat": i, "accepted": v.accepted, "stage_failed": v.stage_failed,
                             "wall_s": v.wall_s, "timed_s": timed, "overhead_s": v.harness_overhead_s,
                             "phase_s": v.phase_s, "candidate_ms": v.candidate_ms, "eager_ms": v.eager_ms,
                             "compile_ms": v.compile_ms, "transport": v.transport,
                             "checked_timed_calls": v.checked_timed_calls})
                print(json.dumps(rows[-1]), flush=True)
                args.out.write_text(json.dumps({"partial_rows": rows}, indent=2))
    summary = {}
    for name in CANDIDATES:
        mine = [r for r in rows if r["candidate"] == name]
        summary[name] = {
            "accepted": mine[0]["accepted"], "stage_failed": mine[0]["stage_failed"],
            "median_wall_s": statistics.median(r["wall_s"] for r in mine),
            "median_timed_s": statistics.median(r["timed_s"] for r in mine),
            "median_overhead_s": statistics.median(r["overhead_s"] for r in mine),
            "median_phase_s": {k: statistics.median(r["phase_s"].get(k, 0.0) for r in mine)
                               for k in sorted({k for r in mine for k in r["phase_s"]})},
            "candidate_ms": mine[0]["candidate_ms"], "eager_ms": mine[0]["eager_ms"], "compile_ms": mine[0]["compile_ms"],
        }
    result = {
        "benchmark": "harness_overhead",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "machine": {"gpu": torch.cuda.get_device_name(0) if device == "cuda" else "cpu", "torch": torch.__version__,
                    "python": platform.python_version()},
        "problem": str(PROBLEM.relative_to(ROOT)),
        "first_evaluation_wall_s_including_judge_and_zygote_start": cold_s,
        "first_evaluation_accepted": first.accepted,
        "summary": summary,
        "rows": rows,
    }
    args.out.write_text(json.dumps(result, indent=2))
    print(f"{'candidate':30} {'verdict':22} {'wall s':>8} {'timed s':>8} {'overhead s':>10} {'fork s':>7}")
    for name, s in summary.items():
        verdict = "accepted" if s["accepted"] else f"rejected ({s['stage_failed']})"
        fork = s["median_phase_s"].get("runner_start", 0.0)
        print(f"{name:30} {verdict:22} {s['median_wall_s']:8.2f} {s['median_timed_s']:8.2f} "
              f"{s['median_overhead_s']:10.2f} {fork:7.3f}")
    print(f"first evaluation incl. judge and zygote start: {cold_s:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
