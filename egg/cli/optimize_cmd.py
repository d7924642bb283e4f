"""``egg optimize PROBLEM``: run the two-stage agent graph and keep the best verified kernel.

Exit status: 0 when the run finished, 2 on bad input (including an LLM endpoint that the
preflight could not use), 3 when the run finished but its LLM part failed during the run (the
endpoint died past its retries: the result is what the other agents found).
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

from egg.cli.executor_args import add_executor_arguments, executor_spec_from
from egg.cli.llm_args import EXIT_LLM_FAILED, add_llm_arguments, llm_options_from
from egg.cli.memory_cmd import add_memory_options, read_memory
from egg.cli.profile_args import add_profile_option
from egg.cli.render import OptimizeProgress, render_report
from egg.config import LLM_OPTION_SOURCES, RunConfig, default_budget, parse_budget
from egg.errors import EggInputError
from egg.report.model import RunReport
from egg.run import run_optimization
from egg.vocabulary import Backend


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "optimize",
        help="generate, verify and tune kernels for a problem",
        description="Stage 1 designs the structure, stage 2 tunes it; the harness judges every candidate.",
    )
    p.add_argument("problem", nargs="?", type=Path, help="KernelBench-format problem file (omit with --resume)")
    p.add_argument("--llm", default="none", help="none (expert agents), PROVIDER:MODEL, or replay:FILE")
    p.add_argument("--backend", default="triton", choices=[b.value for b in Backend])
    p.add_argument("--budget", default=None, help="e.g. candidates=12,llm_calls=20,tokens=200000,wall=10m,rounds=2")
    p.add_argument("--out", type=Path, default=None, help="run directory (default runs/<problem>-<time>)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--principles", action="append", default=[], type=Path, metavar="PATH",
                   help="extra principle pack (repeatable; later packs override earlier ones by id)")
    p.add_argument("--shapes", default=None, help="shape sets every candidate is checked on: a name or a comma list (default: every declared set; 'default' restricts)")
    p.add_argument("--trials", type=int, default=5, help="correctness trials per shape set")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per candidate evaluation")
    p.add_argument("--no-expert-seeds", action="store_true",
                   help="with --llm: do not add the expert agents' first candidates to stage 1")
    p.add_argument("--resume", type=Path, default=None, metavar="RUN_DIR", help="continue an interrupted run")
    p.add_argument("--strict-fp32", action="store_true",
                   help="cuDNN TF32 off for the reference, eager, torch.compile and candidates (PyTorch's default leaves it on)")
    p.add_argument("--allow-tf32", action="store_true", help="TF32 on for matmuls and convolutions (as a problem's ALLOW_TF32)")
    p.add_argument("--match-eager", action="store_true", help="floating outputs must match eager within tolerance (default: or match an exact run of the reference, fp32 for fp16/bf16 outputs and fp64 for fp32 ones, as accurately as eager does)")
    add_memory_options(p, record_only=True)
    add_profile_option(p)
    add_executor_arguments(p)
    add_llm_arguments(p)
    p.set_defaults(func=run)


def _exit_status(report: RunReport) -> int:
    return EXIT_LLM_FAILED if report.llm_failure else 0


def run(args: argparse.Namespace) -> int:
    executor = executor_spec_from(args)  # how, not what: a resumed run may use another executor
    if args.resume is not None:
        if args.problem is not None:
            raise EggInputError("--resume RUN_DIR continues a run with its own problem: give no PROBLEM")
        given = [flag for name, (flag, _) in LLM_OPTION_SOURCES.items() if getattr(args, f"llm_{name}") is not None]
        if given:
            raise EggInputError(f"--resume RUN_DIR asks the LLM the way the run did (its config.json): "
                                f"give no {', '.join(given)}")
        fixed = [flag for flag, on in (("--memory", args.memory is not None), ("--no-memory", args.no_memory),
                                       ("--memory-record-only", args.memory_record_only),
                                       ("--profile", args.profile != "auto")) if on]
        if fixed:
            raise EggInputError(f"--resume RUN_DIR keeps the run's memory and profiler settings (its config.json): "
                                f"give no {', '.join(fixed)}")
        with OptimizeProgress() as progress:
            report = run_optimization(None, None, args.resume, resume=True, progress=progress.update,
                                      executor=executor)
        render_report(report)
        return _exit_status(report)
    if args.problem is None:
        raise EggInputError("egg optimize: expected a PROBLEM file (or --resume RUN_DIR)")
    for path in args.principles:
        if not path.exists():
            raise EggInputError(f"--principles {path}: no such file or directory")
    if args.trials < 1 or args.timeout <= 0:
        raise EggInputError("--trials must be >= 1 and --timeout > 0")
    config = RunConfig(
        llm=args.llm,
        backend=Backend(args.backend),
        device=args.device,
        budget=parse_budget(args.budget, default_budget(args.llm)),
        principles=[str(p.resolve()) for p in args.principles],
        shapes=args.shapes,
        strict_fp32=args.strict_fp32,
        allow_tf32=args.allow_tf32,
        match_eager=args.match_eager,
        trials=args.trials,
        timeout_s=args.timeout,
        expert_seeds=not args.no_expert_seeds,
        llm_options=llm_options_from(args),
        memory=str(args.memory.resolve()) if args.memory else None,
        use_memory=not args.no_memory,
        read_memory=read_memory(args),
        profile=args.profile,
    )
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = args.out or Path("runs") / f"{args.problem.stem}-{stamp}"
    with OptimizeProgress() as progress:
        report = run_optimization(args.problem, config, out, progress=progress.update, executor=executor)
    render_report(report)
    return _exit_status(report)
