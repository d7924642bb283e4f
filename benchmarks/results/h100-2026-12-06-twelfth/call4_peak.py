"""The judge's device peak per phase on the 6 GiB-set problem of test_harness_gpu's memory test."""
import json, tempfile
from pathlib import Path
from egg.evaluate import EvalOptions, Harness
F = Path("tests/fixtures")
out = {}
with Harness(device="cuda") as h:
    for run in ("first", "second"):
        d = Path(tempfile.mkdtemp())
        v = h.evaluate(F / "problems" / "add_relu_huge.py", F / "candidates" / "add_relu_triton.py",
                       EvalOptions(device="cuda", timeout_s=300, seed=7, timing_runs=10), d / "c")
        out[run] = {"accepted": v.accepted, "peak_GiB": (v.peak_device_bytes or 0) / 2**30,
                    "phases_GiB": {k: round(b / 2**30, 2) for k, b in (v.phase_peak_bytes or {}).items()},
                    "start_GiB": (v.start_device_bytes or 0) / 2**30, "reasons": v.reasons[:2]}
print(json.dumps(out))
