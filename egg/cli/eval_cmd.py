"""``egg eval PROBLEM CANDIDATE``: the harness's verdict on one candidate.

Exit code 0 whenever a verdict was reached (accepted or not), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from egg.cli.render import render_verdict
from egg.evaluate.harness import EvalOptions, default_archive_dir, evaluate_candidate


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="judge one candidate kernel against a problem",
        description="Static checks, then a judge process runs the candidate in a sandboxed process of its own: "
                    "correctness on fresh inputs for every declared shape set, kernel ablation, and timing against "
                    "eager and torch.compile (fresh values before every timed call, checked against the physics "
                    "floor and the judge's own clock).",
    )
    p.add_argument("problem", type=Path, help="KernelBench-format problem file (class Model, get_inputs, ...)")
    p.add_argument("candidate", type=Path, help="candidate file defining ModelNew")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per candidate (default 300)")
    p.add_argument("--build-timeout", type=float, default=900.0,
                   help="seconds for building/compile-checking a CUDA extension, not counted in --timeout (default 900)")
    p.add_argument("--trials", type=int, default=5, help="correctness trials per shape set (default 5)")
    p.add_argument("--timing-runs", type=int, default=100, help="timed calls on GPU (default 100)")
    p.add_argument("--shapes", default=None,
                   help="shape sets to check (default: every set the problem declares); 'default', a name or a "
                        "comma list restricts them; the first one is timed")
    p.add_argument("--seed", type=int, default=None, help="base seed (default: random, recorded in the verdict)")
    p.add_argument("--allow-tf32", action="store_true",
                   help="TF32 for fp32 matmuls and convolutions (default: PyTorch's, matmul TF32 off, cuDNN TF32 on)")
    p.add_argument("--strict-fp32", action="store_true",
                   help="cuDNN TF32 off too, for reference, baselines and candidate alike")
    p.add_argument("--match-eager", action="store_true", help="floating outputs must match eager within tolerance (default: or match an exact run of the reference, fp32 for fp16/bf16 outputs and fp64 for fp32 ones, as accurately as eager does)")
    p.add_argument("--out", type=Path, default=None, help="archive directory (default runs/eval-...)")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.allow_tf32 and args.strict_fp32:
        sys.stderr.write("egg: error: --allow-tf32 and --strict-fp32: expected at most one of them\n")
        return 2
    for flag, value, low in (("--trials", args.trials, 1), ("--timing-runs", args.timing_runs, 1)):
        if value < low:
            sys.stderr.write(f"egg: error: {flag}: expected an integer >= {low}, got {value}\n")
            return 2
    for flag, value in (("--timeout", args.timeout), ("--build-timeout", args.build_timeout)):
        if value <= 0:
            sys.stderr.write(f"egg: error: {flag}: expected seconds > 0, got {value}\n")
            return 2
    options = EvalOptions(
        device=args.device,
        timeout_s=args.timeout,
        build_timeout_s=args.build_timeout,
        trials=args.trials,
        timing_runs=args.timing_runs,
        shapes=args.shapes,
        seed=args.seed,
        allow_tf32=args.allow_tf32,
        strict_fp32=args.strict_fp32,
        match_eager=args.match_eager,
    )
    archive = args.out or default_archive_dir(Path("runs"), args.candidate)
    verdict = evaluate_candidate(args.problem, args.candidate, options, archive)
    if args.json:
        sys.stdout.write(verdict.model_dump_json(indent=2) + "\n")
    else:
        render_verdict(verdict)
    return 0
