# %% [markdown]
# # Re-score KernelBench generations with EGG's harness
#
# Other agents publish KernelBench results as a folder of generated kernels named
# `level_{L}_problem_{ID}_sample_{S}_kernel.py`. KernelBench's own evaluation checks outputs on a
# few random inputs and times the kernel; EGG's harness is stricter: static anti-cheat checks
# (a PyTorch fallback, caching outputs across calls, patched timers, side streams ...), more
# correctness trials on fresh and poisoned inputs, and timing against both eager and
# `torch.compile`. `kernelbench_adapter.rescore_suite` runs every generation through it and
# writes the same `results.json` KernelBench writes, plus `suite.json` with fast_p.
#
#     python examples/rescore_kernelbench.py                      # a built-in 3-problem demo
#     python examples/rescore_kernelbench.py --root ~/KernelBench --level 1 --candidates GENS_DIR
#
# (The same through the CLI: `egg kernelbench --root ... --level 1 --candidates GENS_DIR --out OUT`.)
# The demo writes a tiny KernelBench-shaped checkout and three generations: an honest Triton
# kernel, a "kernel" that quietly falls back to PyTorch, and one that is missing.

# %%
import argparse
import os
from datetime import datetime, timezone
from pathlib import Path

import torch

from egg.evaluate.harness import EvalOptions
from egg.logging import configure_logging
from egg.report.suite import write_suite_report
from kernelbench_adapter import rescore_suite

configure_logging(level="warning")
ON_GPU = torch.cuda.is_available()

# %% [markdown]
# ## A tiny KernelBench level
#
# Problem files in KernelBench's format: `Model`, `get_inputs`, `get_init_inputs`. ReLU over
# R x C float32 values reads 4RC bytes and writes 4RC bytes: at 4096 x 8192 that is 268 MB,
# ≈ 0.062 ms at the H200's ~4.3 TB/s, and no kernel can do better than one read and one write.
# On CPU the sizes shrink so the Triton interpreter finishes in seconds.

ROWS, COLS = (4096, 8192) if ON_GPU else (4, 37)
PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {op}


def get_inputs():
    return [torch.randn({rows}, {cols})]


def get_init_inputs():
    return []
'''

HONEST_RELU = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # one program per BLOCK elements: each element is read once and written once (8 bytes fp32)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
'''

# Looks like a kernel, but any exception sends the work back to PyTorch: KernelBench would time
# whichever path ran; EGG's static check rejects the pattern outright.
FALLBACK_SIGMOID = HONEST_RELU.replace("relu_kernel", "sigmoid_kernel").replace(
    "tl.maximum(x, 0.0)", "1.0 / (1.0 + tl.exp(-x))"
).replace(
    "        sigmoid_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)\n        return out\n",
    "        try:\n            sigmoid_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)\n"
    "        except Exception:\n            return torch.sigmoid(x)\n        return out\n",
)


def write_demo(folder: Path) -> tuple[Path, Path]:
    level = folder / "KernelBench" / "level1"
    level.mkdir(parents=True)  # KernelBench's layout: ROOT/KernelBench/level{L}/{ID}_{Name}.py
    for name, op in (("19_ReLU", "torch.relu(x)"), ("21_Sigmoid", "torch.sigmoid(x)"), ("22_Tanh", "torch.tanh(x)")):
        (level / f"{name}.py").write_text(PROBLEM.format(op=op, rows=ROWS, cols=COLS))
    gens = folder / "generations"
    gens.mkdir()
    (gens / "level_1_problem_19_sample_0_kernel.py").write_text(HONEST_RELU)
    (gens / "level_1_problem_21_sample_0_kernel.py").write_text(FALLBACK_SIGMOID)
    # problem 22 has no generation: KernelBench's analysis counts it as a failure, and so do we
    return folder, gens


# %%
parser = argparse.ArgumentParser(description="Re-score KernelBench generations with EGG's harness.")
parser.add_argument("--root", type=Path, help="a KernelBench checkout (default: a built-in demo)")
parser.add_argument("--level", type=int, default=1)
parser.add_argument("--candidates", type=Path, help="folder of level_L_problem_ID_sample_S_kernel.py files")
parser.add_argument("--ids", default=None, help="problem ids, e.g. 1-20,35")
args = parser.parse_args()

base = Path(os.environ.get("EGG_EXAMPLE_OUT", "runs/examples"))
stamp = f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S-%f}"
out = base / f"kb-rescore-{stamp}"
if args.root is None:
    root, candidates = write_demo(base / f"kb-demo-{stamp}")
else:
    if args.candidates is None:
        parser.error("--root needs --candidates")
    root, candidates = args.root, args.candidates

options = EvalOptions(device="cuda" if ON_GPU else "cpu", trials=5 if ON_GPU else 2,
                      timing_runs=100 if ON_GPU else 3)
suite = rescore_suite(root, args.level, candidates, out, options, ids=args.ids)

# %% [markdown]
# ## The scores
#
# fast_p is KernelBench's headline metric: the share of *all* problems whose kernel is correct
# and more than p times faster than the baseline. EGG reports it against eager and against
# `torch.compile`. On CPU the interpreter's timings are not comparable, so only the correctness
# columns mean anything there.

# %%
m = suite.metrics
print(f"{m.total} problems: {m.correct} correct ({m.correctness_rate:.0%}), {m.compiled} compiled")
for result in suite.results:
    verdict = "correct" if result.correctness else f"rejected at {result.stage_failed}"
    reason = f": {result.reasons[0][:110]}" if result.reasons and not result.correctness else ""
    print(f"  {result.problem_id:>3} {result.problem_name:<16} {verdict}{reason}")
print("fast_p vs eager:  ", {p: f"{v:.0%}" for p, v in m.vs_eager.fast_p.items()})
print("fast_p vs compile:", {p: f"{v:.0%}" for p, v in m.vs_compile.fast_p.items()})
if not m.timing_comparable:
    print("(CPU interpreter: speedups are not comparable; fast_p above says nothing about GPU speed)")

page = write_suite_report(out)
print(f"results.json: {out / 'results.json'}\nreport: {page}")
