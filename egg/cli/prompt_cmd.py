"""``egg prompt PROBLEM --stage S --focus F``: the exact prompt an LLM agent would receive.

Lets a user see their principle pack at work: the retrieved principles (by stage, focus, the
problem's operator classes and bottleneck, within the run's token budget) appear with their ids,
and the strategies the transition memory retrieves for this stage and focus (``--memory PATH``,
``--no-memory``) appear as the prompt's "Experience from earlier runs".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.llm.prompts import render_prompt_text
from agents.protocol import AgentTask, Draft, PrincipleRef
from egg.analysis import analyze_problem
from egg.cli.memory_cmd import add_memory_options
from egg.config import RunConfig
from egg.device import device_facts
from egg.errors import EggInputError
from egg.memory import Context, open_memory, render_experience
from egg.problem import inspect_problem, select_shape_sets
from egg.vocabulary import STAGE_FOCUSES, Backend, Focus, Stage
from principles import device_table, load_packs, retrieve


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("prompt", help="print the prompt an LLM agent would receive for a problem")
    p.add_argument("problem", type=Path)
    p.add_argument("--stage", required=True, choices=[s.value for s in Stage])
    p.add_argument("--focus", required=True, choices=[f.value for f in Focus])
    p.add_argument("--principles", action="append", default=[], type=Path, metavar="PATH")
    p.add_argument("--backend", default="triton", choices=[b.value for b in Backend])
    p.add_argument("--shapes", default=None, help="shape set whose sizes the prompt states (default: default)")
    p.add_argument("--budget-tokens", type=int, default=RunConfig().principle_token_budget,
                   help="token budget for the principles (default: the run's)")
    add_memory_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    stage, focus = Stage(args.stage), Focus(args.focus)
    if focus not in STAGE_FOCUSES[stage]:
        allowed = ", ".join(f.value for f in STAGE_FOCUSES[stage])
        raise EggInputError(f"--focus {focus.value}: not a focus of stage {stage.value} (expected one of: {allowed})")
    for path in args.principles:
        if not path.exists():
            raise EggInputError(f"--principles {path}: no such file or directory")
    packs = load_packs(args.principles)  # a bad pack fails before any work is done
    info = inspect_problem(args.problem)
    shape_set = select_shape_sets(info, args.shapes)[0]
    analysis = analyze_problem(args.problem, shape_set=shape_set)
    chosen = retrieve(packs, stage=stage, focus=focus, op_classes=analysis.op_classes,
                      bottleneck=analysis.bottleneck, token_budget=args.budget_tokens)
    memory, _ = open_memory(args.memory, not args.no_memory)
    experience = None
    if memory is not None:
        context = Context.from_analysis(analysis.model_dump(mode="json"), device_facts("auto", device_table(packs)))
        experience = render_experience(memory.observations(stage.value), context, stage=stage.value, focus=focus.value,
                                       budget_tokens=RunConfig().memory_token_budget)
    task = AgentTask(
        problem_path=str(args.problem),
        problem_source=args.problem.read_text(encoding="utf-8"),
        problem_description=analysis.describe(),
        stage=stage,
        focus=focus,
        backend=Backend(args.backend),
        principles=[PrincipleRef(id=p.id, text=p.text) for p in chosen],
        stage_summary="(in a run, the context manager's summary of stage 1 appears here)"
        if stage is Stage.HARDWARE_TUNING else None,
        parent=Draft(
            agent="(stage 1)",
            stage=Stage.ALGORITHM_DESIGN,
            focus=Focus.STRUCTURE,
            source="# (in a run, the source of the stage-1 candidate being refined appears here)",
            structure="(the stage-1 structure)",
            id="(parent id)",
        ) if stage is Stage.HARDWARE_TUNING else None,
        experience=experience,
        evidence="(in a run on a GPU, the profiler's bottleneck statement for the candidate appears here)"
        if stage is Stage.HARDWARE_TUNING else None,
        round=1,
        agent_name=f"llm-{focus.value.replace('_', '-')}",
    )
    sys.stdout.write(render_prompt_text(task) + "\n")
    return 0
