"""Why does the judge's clock reject an honest candidate while another process keeps the GPU busy?

On the H200 (2026-12-03) the honest add+relu Triton kernel (0.05 ms) showed 0.55-0.65 ms of wall
time beyond its null calls on all three sets of timed calls while a process outside EGG's GPU lock
ran fp32 GEMMs, and was rejected (README, "Known false rejection"). This probe judges that
candidate through the real harness under each condition given, and writes every verdict with the
clock's raw figures (``Verdict.clock_sets``: per timed call [null wall, timed wall, reported event]):

- ``alone``: nothing else on the GPU;
- ``gemm``: one co-tenant process running 4096^3 fp32 GEMMs back to back (the GPU test's load);
- ``short``: one co-tenant process running short kernels (0.02 ms elementwise ops) back to back.

Run once per spin setting (the spin is read at import, in the judge and the runner):

    EGG_TIMING_SPIN_US=1000 python benchmarks/cotenant_probe.py --out cotenant_spin1000.json
    EGG_TIMING_SPIN_US=0 python benchmarks/cotenant_probe.py --out cotenant_spin0.json

Summary per condition and set: medians of null, wall, event and of wall - null - event (the time
the judge's clock sees and the events do not). Per condition also ``roundtrip``: the wall time of
one tiny kernel launch + synchronize in this process (the signal a judge could use to tell a shared
GPU from a lying candidate: the runner has synchronised and has no threads, so only a process
outside the evaluation can slow the judge's own round trip), measured before the evaluation.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from egg.evaluate import EvalOptions, Harness  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu_large.py"
HONEST = FIXTURES / "candidates" / "add_relu_triton.py"

LOADS = {
    "gemm": """
import sys, time, torch
a = torch.randn(4096, 4096, device="cuda")
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20):
        a = torch.tanh(a @ a)
    torch.cuda.synchronize()
""",
    "short": """
import sys, time, torch
a = torch.randn(1 << 20, device="cuda")
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(200):
        a = torch.tanh(a)
    torch.cuda.synchronize()
""",
}


@contextlib.contextmanager
def beside(load: str | None, seconds: float = 300) -> Iterator[None]:
    proc = subprocess.Popen([sys.executable, "-c", LOADS[load], str(seconds)]) if load else None
    try:
        if proc:
            time.sleep(5)  # the co-tenant's CUDA context and first kernels are up
        yield
    finally:
        if proc:
            proc.kill()
            proc.wait()


def roundtrip_ms(calls: int = 50) -> dict[str, float]:
    """Median and 90th percentile wall ms of launching one tiny kernel and synchronising."""
    import torch

    x = torch.zeros(1, device="cuda")
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        x.add_(1)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return {"median": statistics.median(times), "p90": times[int(0.9 * (len(times) - 1))], "max": times[-1]}


def summarise(sets: list[list[list[float]]]) -> list[dict[str, float]]:
    out = []
    for calls in sets:
        nulls, walls, events = zip(*calls)
        unseen = [w - n - e for n, w, e in calls]
        out.append({"calls": len(calls), "null_median": statistics.median(nulls), "wall_median": statistics.median(walls),
                    "event_median": statistics.median(events), "unseen_median": statistics.median(unseen),
                    "unseen_q25": sorted(unseen)[len(unseen) // 4], "unseen_max": max(unseen)})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conditions", default="alone,gemm,short")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for condition in args.conditions.split(","):
        load = None if condition == "alone" else condition
        with beside(load), Harness(device="cuda") as harness:
            roundtrip = roundtrip_ms()
            options = EvalOptions(device="cuda", timeout_s=300, seed=7, static_checks=True)
            v = harness.evaluate(PROBLEM, HONEST, options, args.out.parent / f"cotenant_{condition}")
        rows.append({"condition": condition, "accepted": v.accepted, "reasons": v.reasons, "notes": v.notes,
                     "candidate_ms": v.candidate_ms, "judge_clock_ms": v.judge_clock_ms,
                     "null_call_ms": v.null_call_ms, "roundtrip_ms": roundtrip, "sets": summarise(v.clock_sets),
                     "clock_sets": v.clock_sets})
        print(json.dumps({k: rows[-1][k] for k in ("condition", "accepted", "candidate_ms", "judge_clock_ms",
                                                   "roundtrip_ms", "sets")}),
              flush=True)
    args.out.write_text(json.dumps({"benchmark": "cotenant_probe", "date": datetime.now(timezone.utc).isoformat(),
                                    "spin_us": os.environ.get("EGG_TIMING_SPIN_US", "1000"),
                                    "commit": os.environ.get("EGG_COMMIT"), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
