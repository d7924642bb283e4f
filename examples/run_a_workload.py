# %% [markdown]
# # Run a shipped workload
#
# `workloads/` holds problems taken from real models (RMSNorm, SwiGLU, rotary embeddings,
# attention, ...), each in KernelBench's format (`Model`, `get_inputs`, `get_init_inputs`) plus
# named shape sets: production sizes by default, and a `small` set that the CPU interpreter can
# run in seconds. This example runs the command a person would type,
#
#     egg optimize workloads/rms_norm.py --shapes small --device cpu
#
# in a subprocess, then reads the run directory it leaves behind: `report.json` (for scripts)
# and `report.html` (for people; self-contained, open it from disk).
#
# Run it with `python examples/run_a_workload.py`.

# %%
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import torch

from egg.report.model import RunReport

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = REPO / "workloads" / "rms_norm.py"

# %% [markdown]
# ## What the kernel has to beat
#
# RMSNorm at production size is TOKENS=8192 rows of HIDDEN=4096 bf16 values: it reads
# 8192·4096·2 B = 64 MiB, writes as much, and reads an 8 KiB gain, 134.2 MB in all. Each row is
# one reduction (sum of squares) followed by an elementwise scale, and 4096 elements fit in one
# Triton program, so the ideal kernel reads each row once into registers and writes it once:
# 134.2 MB / 4.3 TB/s ≈ 0.031 ms on an H200. Eager PyTorch upcasts to fp32 and runs pow, mean,
# rsqrt, mul, cast and mul as separate kernels, re-reading the activation several times.
#
# On a GPU this example times the production shapes; on CPU it uses the `small` set
# (6 x 384 float32) and a small budget, and the report says the timings are not comparable.

# %%
ON_GPU = torch.cuda.is_available()
OUT = Path(os.environ.get("EGG_EXAMPLE_OUT", "runs/examples"))
OUT = OUT / f"rms_norm-{datetime.now(timezone.utc):%Y%m%d-%H%M%S-%f}"
if ON_GPU:
    args = ["--device", "cuda"]
else:
    args = ["--shapes", "small", "--device", "cpu", "--budget", "rounds=1,stage2_rounds=1,candidates=4",
            "--trials", "2"]
command = [sys.executable, "-m", "egg", "optimize", str(WORKLOAD), *args, "--out", str(OUT)]
print("$", " ".join(command[2:]))
completed = subprocess.run(command, cwd=REPO, text=True, capture_output=True, env={**os.environ, "COLUMNS": "120"})
print(completed.stdout[-3000:])
if completed.returncode != 0:
    sys.exit(f"egg optimize failed ({completed.returncode}):\n{completed.stderr[-2000:]}")

# %% [markdown]
# ## Reading report.json
#
# The report is a pydantic model (`egg.report.model.RunReport`): the analysis (FLOPs, minimum
# bytes, H200 roofline), the eager and `torch.compile` baselines, every candidate with its
# verdict, the stage summaries, and the best candidate.

# %%
report = RunReport.model_validate_json((OUT / "report.json").read_text())
analysis = report.analysis
print(f"analysis: {', '.join(analysis.get('op_classes', []))}, {analysis.get('bottleneck')} bound, "
      f"{analysis.get('min_bytes', 0):,} bytes at least, H200 roofline {analysis.get('roofline_ms', 0):.3g} ms "
      f"(shape set {analysis.get('shape_set')})")


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g} ms"


print(f"baseline on {report.device}: eager {ms(report.baseline.get('eager_ms'))}, "
      f"torch.compile {ms(report.baseline.get('compile_ms'))}")
accepted = [c for c in report.candidates if c.accepted]
print(f"{len(report.candidates)} candidates evaluated, {len(accepted)} accepted")
for record in report.candidates:
    print(f"  {record.line()[:150]}")
print(report.outcome)
if report.best is not None and report.timing_comparable:
    fraction = analysis.get("roofline_ms", 0) / report.best.candidate_ms if report.best.candidate_ms else 0
    print(f"best: {report.speedup_vs_eager:.2f}x vs eager, {report.speedup_vs_compile or 0:.2f}x vs torch.compile, "
          f"{fraction:.0%} of the roofline")
for note in report.notes:
    print(f"note: {note}")

# %% The page for people: regenerate it any time with `egg report RUN_DIR`.
html = OUT / "report.html"
print(f"report.html: {html} ({html.stat().st_size // 1024} KiB, no network needed)")
if not html.is_file():
    sys.exit("report.html is missing")
