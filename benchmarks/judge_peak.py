"""The judge's device-memory peak, whole and per phase, on the GPU memory test's problem (GPU).

``tests/evaluate/test_harness_gpu.py`` bounds the judge's peak at 4.5 times a problem's tensor set;
this prints what it is and which phase sets it (``Verdict.phase_peak_bytes``), for two evaluations
by one judge (the second shows what the first left behind), as one JSON line:

    python benchmarks/judge_peak.py > peak.txt

2026-12-06 (H100): 26.0 GiB on both, set by the timing and ablation phases (BENCHMARKS.md, twelfth
session). Before that verdict field existed the same measurement ran as
``benchmarks/results/h100-2026-12-06-eleventh/call2_peak.py`` (the whole peak only).
"""

import json
import tempfile
from pathlib import Path

from egg.evaluate import EvalOptions, Harness

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def main() -> None:
    out = {}
    with Harness(device="cuda") as h:
        for run in ("first", "second"):
            where = Path(tempfile.mkdtemp()) / "c"
            v = h.evaluate(FIXTURES / "problems" / "add_relu_huge.py", FIXTURES / "candidates" / "add_relu_triton.py",
                           EvalOptions(device="cuda", timeout_s=300, seed=7, timing_runs=10), where)
            out[run] = {"accepted": v.accepted, "peak_GiB": (v.peak_device_bytes or 0) / 2**30,
                        "phases_GiB": {k: round(b / 2**30, 2) for k, b in v.phase_peak_bytes.items()},
                        "start_GiB": (v.start_device_bytes or 0) / 2**30, "reasons": v.reasons[:2]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
