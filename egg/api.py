"""``egg.optimize``: the Python entry point.

* ``optimize("problem.py")`` runs the graph on a KernelBench-format file;
* ``optimize(module, inputs)`` runs it on a live module; the returned ``.module`` computes with the
  live module's own parameters and buffers (later updates to them are seen);
* ``optimize(module)`` is ``torch.compile(module, backend="egg")`` (:mod:`egg.backend`): each
  graph TorchDynamo captures is optimized on first use, and results are cached on disk by the
  graph, its input specs, the device and the EGG version, so a second process reuses them;
* ``load_result(run_dir)`` gives the same result for a finished run (``egg optimize`` on the CLI).

The returned module is the reference itself when no candidate was accepted, or when the best
accepted one is slower than eager PyTorch on the GPU (``OptimizeResult.kept_reference`` says why).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import structlog
import torch
from langchain_core.language_models import BaseChatModel
from torch import nn

from egg.config import Budget, RunConfig, default_budget, parse_budget
from egg.errors import EggInputError
from egg.live import bind_parameters, write_live_problem
from egg.problem import import_file, load_problem_module
from egg.report.model import RunReport, slower_than_eager
from egg.run import run_optimization
from egg.vocabulary import Backend

log = structlog.get_logger(__name__)


@dataclass
class OptimizeResult:
    module: nn.Module  # drop-in module running the best kernel (the reference if none was accepted)
    source: str | None  # the best candidate's source
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    report: RunReport
    run_dir: Path
    kept_reference: str | None = None  # why ``module`` is the reference although a candidate was accepted


def _config(llm: Any, backend: str, budget: Any, principles: Any, device: str, shapes: str | None) -> tuple[RunConfig, BaseChatModel | None]:
    chat_model = llm if isinstance(llm, BaseChatModel) else None
    if isinstance(budget, Budget):
        parsed = budget
    elif isinstance(budget, dict):
        parsed = Budget.model_validate(budget)
    else:
        parsed = parse_budget(budget, default_budget("scripted" if chat_model is not None else (llm or "none")))
    config = RunConfig(
        llm="scripted" if chat_model is not None else (llm or "none"),
        backend=Backend(backend),
        device=device,
        budget=parsed,
        principles=[str(Path(p).resolve()) for p in principles],
        shapes=shapes,
    )
    return config, chat_model


def _device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def load_best(problem_path: Path, best_path: Path, device: torch.device, seed: int = 0) -> nn.Module:
    """Construct the best candidate's ModelNew the way the harness did (same seed, same args)."""
    problem = load_problem_module(problem_path)
    candidate = import_file(best_path, "egg_best")
    torch.manual_seed(seed)
    init_inputs = problem.get_init_inputs()
    torch.manual_seed(seed)
    return candidate.ModelNew(*init_inputs).to(device)


def _reference(problem_path: Path, device: torch.device, seed: int = 0) -> nn.Module:
    problem = load_problem_module(problem_path)
    torch.manual_seed(seed)
    return problem.Model(*problem.get_init_inputs()).to(device)


def _result(report: RunReport, problem_path: Path, run_dir: Path, device: torch.device,
            live: nn.Module | None) -> OptimizeResult:
    best_path = run_dir / "best.py"
    slower = slower_than_eager(report.best)
    if report.best is None or not best_path.is_file() or slower is not None:
        if slower is not None:
            log.warning("optimize.kept_reference", reason=slower, run_dir=str(run_dir))
        module = live if live is not None else _reference(problem_path, device)
        return OptimizeResult(module, None, None, None, report, run_dir, kept_reference=slower)
    module = load_best(problem_path, best_path, device, seed=report.config.get("seed", 0))
    if live is not None:
        unbound = bind_parameters(module, live)
        if unbound:
            log.warning("optimize.unbound_parameters", names=unbound,
                        hint="the optimized module keeps its own copies of these")
    return OptimizeResult(module, best_path.read_text(encoding="utf-8"), report.speedup_vs_eager,
                          report.speedup_vs_compile, report, run_dir)


def load_result(run_dir: str | Path, device: str = "auto") -> OptimizeResult:
    """The drop-in module and figures of a finished run directory (``egg optimize --out RUN_DIR``)."""
    run_dir = Path(run_dir)
    report_path = run_dir / "report.json"
    if not report_path.is_file():
        raise EggInputError(f"{run_dir}: no report.json (expected a finished 'egg optimize' run directory)")
    report = RunReport.model_validate_json(report_path.read_text())
    return _result(report, run_dir / "problem.py", run_dir, _device(device), None)


def optimize(
    target: str | Path | nn.Module,
    inputs: list[Any] | tuple[Any, ...] | None = None,
    *,
    llm: str | BaseChatModel | None = None,
    backend: str = "triton",
    budget: Budget | str | dict[str, Any] | None = None,
    principles: tuple[str | Path, ...] | list[str | Path] = (),
    device: str = "auto",
    out: str | Path | None = None,
    shapes: str | None = None,
) -> Any:
    """Optimize a problem file or a live module; see the module docstring for the three forms."""
    config, chat_model = _config(llm, backend, budget, principles, device, shapes)
    if isinstance(target, nn.Module) and inputs is None:
        from egg.backend import optimize_module

        return optimize_module(target, chat_model, llm=config.llm, budget=config.budget, device=device,
                               backend=backend, principles=config.principles)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-%f")
    if isinstance(target, nn.Module):
        run_dir = Path(out) if out else Path("runs") / f"{type(target).__name__}-{stamp}"
        problem = write_live_problem(target, list(inputs or []), run_dir / "live")
        report = run_optimization(problem, config, run_dir / "run", chat_model=chat_model)
        return _result(report, run_dir / "run" / "problem.py", run_dir / "run", _device(device), target)
    path = Path(target)
    run_dir = Path(out) if out else Path("runs") / f"{path.stem}-{stamp}"
    report = run_optimization(path, config, run_dir, chat_model=chat_model)
    return _result(report, run_dir / "problem.py", run_dir, _device(device), None)


def cache_root() -> Path:
    return Path(os.environ.get("EGG_CACHE_DIR", Path.home() / ".cache" / "egg"))
