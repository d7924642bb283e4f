"""Helpers the expert-agent tests share: the shipped workloads (and fp16 copies of them), the
designer's drafts for a problem, and the harness's verdict on one of them. Tests import this module
by name; this folder's conftest puts it on sys.path."""

from __future__ import annotations

import re
from pathlib import Path

from agents.expert.agents import ExpertDesigner
from agents.protocol import AgentTask, Draft
from egg.evaluate.harness import EvalOptions, Harness
from egg.vocabulary import Backend, Focus, Stage

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


def designs(path: Path, shape_set: str) -> list[Draft]:
    """The expert designer's stage-1 drafts for the problem at ``path`` (at least one)."""
    task = AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="",
                     stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, backend=Backend.TRITON, parent=None,
                     round=1, agent_name="expert")
    designer = ExpertDesigner(device="cpu", shape_set=shape_set)
    found = designer.propose(task)
    assert found, designer.last_errors
    return found


def accepted(harness: Harness, path: Path, source: str, shape_set: str, where: Path) -> None:
    """``source`` is accepted by the real harness on ``shape_set`` and launched a generated kernel."""
    where.mkdir(parents=True, exist_ok=True)
    candidate = where / "candidate.py"
    candidate.write_text(source)
    verdict = harness.evaluate(path, candidate, EvalOptions(device="cpu", timeout_s=300, shapes=shape_set), where)
    assert verdict.accepted, f"{verdict.stage_failed}: {verdict.reasons}"
    assert verdict.kernels_launched
