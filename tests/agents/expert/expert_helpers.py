"""Helpers the expert-agent tests share: problem files, the designer's drafts, the judge's verdict.
Tests import this module by name; this folder's conftest puts it on sys.path."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agents.expert.agents import ExpertDesigner
from agents.expert.design import ExpertCandidate, design_candidates
from agents.protocol import AgentTask, Draft
from egg.evaluate.harness import EvalOptions, Harness

WORKLOADS = Path(__file__).resolve().parents[3] / "workloads"


def fp16_copy(name: str, directory: Path) -> Path:
    """``workloads/<name>.py`` with its ``odd`` shape set in float16 instead of bfloat16 (the Triton
    CPU interpreter's bf16 arithmetic is wrong)."""
    source = (WORKLOADS / f"{name}.py").read_text()
    source, n = re.subn(r'("odd": \{[^}]*?)\}', r'\1, "DTYPE": "float16"}', source, count=1)
    assert n == 1
    path = directory / f"{name}.py"
    path.write_text(source)
    return path


def problem(directory: Path, name: str, forward: str, inputs: str, init: str = "", header: str = "",
            init_inputs: str = "[]") -> Path:
    """A KernelBench-format problem: ``forward`` is the body of ``Model.forward(self, *args)``
    (indented by 8), ``init`` the body of ``__init__`` after ``super().__init__()``."""
    body = "".join(f"        {line}\n" for line in init.strip("\n").splitlines()) if init.strip() else ""
    fwd = "".join(f"        {line}\n" for line in forward.strip("\n").splitlines())
    args = re.search(r"^# args: (.*)$", header, re.M)
    signature = args.group(1) if args else "x"
    source = (f"import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n{header}\n\n"
              f"class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n{body}\n"
              f"    def forward(self, {signature}):\n{fwd}\n\n"
              f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init_inputs}\n")
    path = directory / f"{name}.py"
    path.write_text(source)
    return path


def designs(path: Path, shape_set: str) -> list[Draft]:
    """The expert designer's stage-1 drafts for the problem at ``path`` (at least one)."""
    task = AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="",
                     stage="algorithm_design", focus="structure", backend="triton", parent=None,
                     round=1, agent_name="expert")
    designer = ExpertDesigner(device="cpu", shape_set=shape_set)
    found = designer.propose(task)
    assert found, designer.last_errors
    return found


def offered(path: Path, variant: str, shape_set: str = "default", device: str = "cpu") -> ExpertCandidate:
    """The designer's candidate of ``variant`` for the problem (it must be offered)."""
    found = [c for c in design_candidates(path, shape_set, device) if c.variant == variant]
    assert found, f"the {variant} variant is not offered"
    return found[0]


def launches(verdict: Any) -> int:
    """Generated-kernel launches in one forward call, as the judge measured them (distinct kernel
    names where this judge does not report the count)."""
    count = getattr(verdict, "launches_per_call", None)
    return count if count is not None else len(set(verdict.kernels_launched))


def judge(harness: Harness, path: Path, source: str, shape_set: str, where: Path) -> Any:
    where.mkdir(parents=True, exist_ok=True)
    candidate = where / "candidate.py"
    candidate.write_text(source)
    return harness.evaluate(path, candidate, EvalOptions(device="cpu", timeout_s=300, shapes=shape_set), where)


def accepted(harness: Harness, path: Path, source: str, shape_set: str, where: Path) -> Any:
    """``source`` is accepted by the real harness on ``shape_set`` and launched a generated kernel."""
    verdict = judge(harness, path, source, shape_set, where)
    assert verdict.accepted, f"{verdict.stage_failed}: {verdict.reasons}"
    assert verdict.kernels_launched
    return verdict


def check(harness: Harness, path: Path, where: Path, shape_set: str = "default", kernels: int | None = None,
          torch_ops: list[str] | None = None, every_variant: bool = False) -> list[ExpertCandidate]:
    """The default candidate (or every variant) accepted, with the planned launches (measured
    launches equal the codegen's own count) and torch ops."""
    cands = design_candidates(path, shape_set, "cpu")
    for i, c in enumerate(cands if every_variant else cands[:1]):
        verdict = accepted(harness, path, c.source, shape_set, where / f"{i}_{c.variant}")
        assert launches(verdict) == c.kernels, (c.variant, launches(verdict), c.kernels, c.structure)
    if kernels is not None:
        assert cands[0].kernels == kernels, (cands[0].kernels, cands[0].structure)
    if torch_ops is not None:
        assert cands[0].torch_ops == torch_ops, cands[0].torch_ops
    return cands


def forced(path: Path, shape_set: str = "default", variant: int = 0, device: str = "cpu",
           **config: Any) -> ExpertCandidate:
    """The candidate re-rendered with ``config`` set on every kernel whose template knows the keys
    (a looped reduction, a small RBLOCK, split-K ...)."""
    from agents.expert.design import analyse, render
    from agents.expert.templates import template_for

    program = analyse(path, shape_set)
    chosen = program.variants[variant]
    overrides = {k.name: {p: v for p, v in config.items() if p in template_for(k).tuning_space(k) or p == "PERSISTENT"}
                 for k in chosen.program.kernels}
    return render(program, chosen, device, overrides)
