"""Real-world LLM training and inference workloads, as KernelBench-format problem files.

Each ``workloads/<name>.py`` is an ordinary EGG problem (see :mod:`egg.problem`): module-level
constants give the production shape (sized for one H200), ``SHAPES`` declares extra sets
(always a CPU-sized ``small`` one, usually an ``odd`` one with sizes that are not multiples of a
power of two, sometimes ``decode``/``prefill``/``vit``), and ``DTYPE`` names the dtype as a
string (``small`` sets use ``float32``: the Triton CPU interpreter's bf16 is not faithful).

This module lists them *statically* (AST only, no torch import) and resolves names to paths;
:func:`compulsory_bytes` imports one on the meta device to size its traffic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from egg.errors import EggInputError
from egg.problem import DEFAULT_SHAPE_SET, inspect_problem, load_problem_module

WORKLOADS_DIR = Path(__file__).resolve().parent


class WorkloadInfo(BaseModel):
    """What ``egg workloads list`` shows about one workload."""

    name: str
    path: Path
    summary: str
    shape_sets: dict[str, dict[str, Any]]
    production: dict[str, Any]
    dtype: str | None = None


def _workload_files() -> list[Path]:
    return sorted(p for p in WORKLOADS_DIR.glob("*.py") if not p.name.startswith("_"))


def workload_names() -> list[str]:
    """Names of the shipped workloads, sorted."""
    return [p.stem for p in _workload_files()]


def list_workloads() -> list[WorkloadInfo]:
    """Every shipped workload with its summary, shape sets, production constants and dtype."""
    infos = []
    for path in _workload_files():
        info = inspect_problem(path)
        doc = (info.docstring or "").strip()
        infos.append(
            WorkloadInfo(
                name=info.name,
                path=info.path,
                summary=doc.splitlines()[0] if doc else "",
                shape_sets=info.shape_sets,
                production=info.constants,
                dtype=info.constants.get("DTYPE"),
            )
        )
    return infos


def workload_path(name: str) -> Path:
    """Path of the workload called ``name`` (``rms_norm`` or ``rms_norm.py``); one-line error if unknown."""
    stem = name[:-3] if name.endswith(".py") else name
    path = WORKLOADS_DIR / f"{stem}.py"
    if stem.startswith("_") or "/" in stem or not path.is_file():
        raise EggInputError(f"unknown workload {name!r} (known: {', '.join(workload_names())})")
    return path


def compulsory_bytes(name_or_path: str | Path, shape_set: str = DEFAULT_SHAPE_SET) -> int:
    """Bytes a perfect kernel must move for one forward: inputs + parameters/buffers + outputs.

    Built on the meta device (no memory, no compute), so it is cheap at production shapes. It is
    a lower bound on traffic: it ignores re-reads and the intermediates the reference writes.
    """
    import torch

    path = Path(name_or_path) if Path(name_or_path).suffix == ".py" else workload_path(str(name_or_path))
    info = inspect_problem(path)
    if shape_set not in info.shape_sets:
        raise EggInputError(
            f"{path.name}: no shape set {shape_set!r} (declared: {', '.join(info.shape_sets)})"
        )
    module = load_problem_module(path, info.shape_sets[shape_set])

    def nbytes(obj: Any) -> int:
        if isinstance(obj, torch.Tensor):
            return obj.numel() * obj.element_size()
        if isinstance(obj, (list, tuple)):
            return sum(nbytes(o) for o in obj)
        return 0

    with torch.device("meta"), torch.no_grad():
        model = module.Model(*module.get_init_inputs())
        inputs = module.get_inputs()
        outputs = model(*inputs)
    state = list(model.parameters()) + list(model.buffers())
    return nbytes(inputs) + nbytes(state) + nbytes(outputs)
