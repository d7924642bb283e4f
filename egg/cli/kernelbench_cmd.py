"""``egg kernelbench --root PATH --level N``: EGG over a local KernelBench checkout, or re-scoring.

Without ``--candidates`` every selected problem is optimised (one run directory each); with
``--candidates DIR`` the KernelBench generations in DIR are judged by EGG's harness. Both write
``OUT/results.json`` (KernelBench's eval_results.json shape) and ``OUT/suite.json`` after every
problem and end with KernelBench's metrics (fast_p, correctness rate, geometric-mean speedup)
against eager and against torch.compile. See kernelbench_adapter/README.md.
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.table import Table

from egg.cli.executor_args import add_executor_arguments, executor_spec_from
from egg.cli.llm_args import add_llm_arguments, llm_options_from
from egg.cli.memory_cmd import add_memory_options, read_memory
from egg.cli.profile_args import add_profile_option
from egg.cli.render import console
from egg.config import RunConfig, default_budget, parse_budget
from egg.errors import EggInputError
from egg.vocabulary import Backend


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "kernelbench",
        help="run EGG on a local KernelBench checkout, or re-score KernelBench generations",
        description="Problems spread over the executor's workers, resumable; KernelBench's fast_p, correctness rate and "
        "geometric-mean speedup against eager and torch.compile.",
    )
    p.add_argument("--root", type=Path, required=True, help="your KernelBench checkout (or a folder with level{N}/)")
    p.add_argument("--level", type=int, required=True, help="KernelBench level (1, 2, 3, ...)")
    p.add_argument("--ids", default=None, help="problem ids, e.g. 1-20,35 (default: all of the level)")
    p.add_argument("--limit", type=int, default=None, help="at most this many of the selected problems")
    p.add_argument("--candidates", type=Path, default=None, metavar="DIR",
                   help="re-score generations named level_{L}_problem_{ID}_sample_{S}_kernel.py instead of optimising")
    p.add_argument("--out", type=Path, default=None, help="output directory (default runs/kernelbench-l<N>-<mode>-<time>)")
    p.add_argument("--resume", action="store_true", help="continue the suite in --out; finished problems are kept")
    p.add_argument("--llm", default="none", help="none (expert agents), PROVIDER:MODEL, or replay:FILE")
    p.add_argument("--backend", default="triton", choices=[b.value for b in Backend])
    p.add_argument("--budget", default=None, help="per problem, e.g. candidates=12,llm_calls=20,wall=10m")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--principles", action="append", default=[], type=Path, metavar="PATH",
                   help="extra principle pack (repeatable)")
    p.add_argument("--trials", type=int, default=5, help="correctness trials per candidate")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per candidate evaluation")
    p.add_argument("--seed", type=int, default=None, help="re-scoring: base seed (default random, recorded)")
    p.add_argument("--no-expert-seeds", action="store_true", help="with --llm: no expert first candidates")
    p.add_argument("--strict-fp32", action="store_true",
                   help="cuDNN TF32 off for the reference, eager, torch.compile and candidates (PyTorch's default leaves it on)")
    p.add_argument("--allow-tf32", action="store_true", help="TF32 on for matmuls and convolutions (as a problem's ALLOW_TF32)")
    p.add_argument("--match-eager", action="store_true", help="floating outputs must match eager within tolerance (default: or match an exact run of the reference, fp32 for fp16/bf16 outputs and fp64 for fp32 ones, as accurately as eager does)")
    add_memory_options(p, record_only=True)
    add_profile_option(p)
    add_executor_arguments(p)
    add_llm_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from egg.evaluate.harness import EvalOptions
    from kernelbench_adapter import rescore_suite, run_suite

    if args.trials < 1 or args.timeout <= 0:
        raise EggInputError("--trials must be >= 1 and --timeout > 0")
    executor = executor_spec_from(args)
    if args.resume and args.out is None:
        raise EggInputError("--resume continues a suite: give its --out DIR")
    for path in args.principles:
        if not path.exists():
            raise EggInputError(f"--principles {path}: no such file or directory")
    mode = "rescore" if args.candidates is not None else "optimize"
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = args.out or Path("runs") / f"kernelbench-l{args.level}-{mode}-{stamp}"
    if args.candidates is not None:
        options = EvalOptions(device=args.device, timeout_s=args.timeout, trials=args.trials, seed=args.seed,
                              strict_fp32=args.strict_fp32, allow_tf32=args.allow_tf32, match_eager=args.match_eager)
        with SuiteProgress() as progress:
            report = rescore_suite(args.root, args.level, args.candidates, out, options, ids=args.ids,
                                   limit=args.limit, resume=args.resume, progress=progress.update, executor=executor)
    else:
        config = RunConfig(
            llm=args.llm,
            backend=Backend(args.backend),
            device=args.device,
            budget=parse_budget(args.budget, default_budget(args.llm)),
            principles=[str(p.resolve()) for p in args.principles],
            trials=args.trials,
            timeout_s=args.timeout,
            strict_fp32=args.strict_fp32,
            allow_tf32=args.allow_tf32,
            match_eager=args.match_eager,
            expert_seeds=not args.no_expert_seeds,
            llm_options=llm_options_from(args),
            memory=str(args.memory.resolve()) if args.memory else None,
            use_memory=not args.no_memory,
            read_memory=read_memory(args),
            profile=args.profile,
        )
        if config.llm != "none":
            from agents.factory import llm_setup
            from agents.llm.preflight import preflight_setup

            setup = llm_setup(config)  # one-line errors before anything is created: a bad spec,
            assert setup is not None
            preflight_setup(setup.cfg, setup.model)  # an endpoint that cannot be used
        with SuiteProgress() as progress:
            report = run_suite(args.root, args.level, out, config, ids=args.ids, limit=args.limit,
                               resume=args.resume, progress=progress.update, executor=executor)
    render_suite(report)
    return 0


class SuiteProgress:
    """A bar over the suite's problems (samples, when re-scoring) and the current one's status.

    The bar appears at the suite's first event, so input errors raised before it stay one line.
    """

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("[bold]kernelbench[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[correct]} correct"),
            TextColumn("{task.fields[current]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            disable=not console.is_terminal,  # piped stdout carries the results alone
        )
        self._task = self._progress.add_task("suite", total=None, correct=0, current="")
        self._correct = 0
        self._label = ""
        self._started = False

    def __enter__(self) -> SuiteProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started:
            self._progress.stop()

    def update(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "suite_start":
            if not self._started:
                self._progress.start()
                self._started = True
            self._progress.update(self._task, total=event["total"])
        elif kind == "problem_start":
            problem, sample = event["problem"], event.get("sample_id", 0)
            self._label = f"{problem.stem}" + (f" sample {sample}" if sample else "")
            self._progress.update(self._task, current=f"{self._label} ...")
        elif kind == "problem_done":
            result = event["result"]
            if result.correctness and result.sample_id == 0:
                self._correct += 1
            status = "kept" if event.get("skipped") else ("ok" if result.correctness else f"failed ({result.stage_failed})")
            self._progress.update(self._task, advance=1, correct=self._correct,
                                  current=f"{event['problem'].stem}: {status}")
        elif kind == "stage":
            self._progress.update(self._task, current=f"{self._label}: {event['stage']}")
        elif kind == "candidate":
            record = event["record"]
            verdict = "ok" if record.accepted else f"rejected ({record.stage_failed})"
            self._progress.update(self._task, current=f"{self._label}: {record.id} {verdict}")


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def render_suite(report: Any) -> None:  # a kernelbench_adapter.SuiteReport
    table = Table(title=f"level {report.level} ({report.mode}): per problem")
    for col in ("id", "problem", "sample", "verdict", "vs eager", "vs compile"):
        table.add_column(col)
    for r in report.results:
        verdict = "[green]correct[/]" if r.correctness else f"[red]{r.stage_failed}[/]"
        table.add_row(str(r.problem_id), r.problem_name, str(r.sample_id), verdict,
                      _x(r.speedup_vs_eager), _x(r.speedup_vs_compile))
    console.print(table)
    for r in report.results:
        if not r.correctness and r.reasons:
            console.print(f"  {r.problem_id}/{r.sample_id} {r.stage_failed}: {r.reasons[0]}", markup=False)
    m = report.metrics
    fast = Table(title="fast_p: correct and speedup > p, over all problems (KernelBench score.py)")
    for col in ("p", "vs eager", "vs torch.compile"):
        fast.add_column(col)
    for p, value in m.vs_eager.fast_p.items():
        fast.add_row(p, f"{value:.3f}", f"{m.vs_compile.fast_p[p]:.3f}")
    console.print(fast)
    console.print(f"  problems: {m.total}  compiled: {m.compiled} ({m.compilation_rate:.1%})  "
                  f"correct: {m.correct} ({m.correctness_rate:.1%})")
    console.print(f"  geometric-mean speedup over correct problems: {m.vs_eager.geo_mean_speedup:.3f}x vs eager, "
                  f"{m.vs_compile.geo_mean_speedup:.3f}x vs torch.compile")
    for b in (m.vs_eager, m.vs_compile):
        if b.untimed_correct:
            console.print(f"  note: {b.untimed_correct} correct problem(s) have no timing vs {b.baseline}; "
                          "they count as not fast and are left out of its geometric mean", markup=False)
    if not m.timing_comparable:
        console.print("  note: CPU run (Triton interpreter): speedups are not comparable", markup=False)
    if report.pending:
        console.print(f"  note: not finished: {', '.join(map(str, report.pending))} (use --resume)", markup=False)
    console.print(f"  results: {report.out_dir}/results.json, {report.out_dir}/suite.json, "
                  f"{report.out_dir}/report.html", markup=False)
