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
It is built at the shape set it was checked at: with ``shapes="small"``, a problem whose ``Model``
takes size constants gets them from its ``small`` set (``OptimizeResult.shape_set``).

A chat model passed as ``llm`` is used as given, on a copy with its client's retries off (ours
apply; :func:`agents.llm.models.adopt_chat_model`), and reports name it ``python:CLASS:MODEL``.
Request options come from the ``EGG_LLM_*`` variables, or ``llm_options``.

Logging: unless the program configured structlog itself (or through :func:`egg.logging.configure_logging`),
the API logs warnings and errors only, on stderr; ``EGG_LOG_LEVEL=info`` shows more.

On a CPU the returned module runs its Triton kernels in Triton's interpreter, which is chosen when
a kernel is defined: the candidate is imported with ``TRITON_INTERPRET=1`` set (for that import
only) unless the variable is already set, so nothing needs setting beforehand.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import structlog
import torch
from langchain_core.language_models import BaseChatModel
from torch import nn

from egg.config import Budget, LLMOptions, RunConfig, default_budget, parse_budget
from egg.config import llm_options as resolve_llm_options
from egg.errors import EggInputError
from egg.live import bind_parameters, write_live_problem
from egg.logging import ensure_logging
from egg.problem import DEFAULT_SHAPE_SET, import_file, inspect_problem, load_problem_module, select_shape_sets
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
    shape_set: str = DEFAULT_SHAPE_SET  # the shape set ``module`` was built at (and checked at)
    llm_failure: str | None = None  # the run finished, but its LLM part failed (report.llm_failure)


def _config(llm: Any, backend: str, budget: Any, principles: Any, device: str, shapes: str | None,
            options: LLMOptions | dict[str, Any] | None) -> tuple[RunConfig, BaseChatModel | None]:
    chat_model = llm if isinstance(llm, BaseChatModel) else None
    if chat_model is not None:
        from agents.llm.models import chat_model_label

        spec = f"python:{chat_model_label(chat_model)}"
    else:
        spec = llm or "none"
    if isinstance(budget, Budget):
        parsed = budget
    elif isinstance(budget, dict):
        parsed = Budget.model_validate(budget)
    else:
        parsed = parse_budget(budget, default_budget(spec))
    if isinstance(options, LLMOptions):
        resolved = options
    else:
        try:
            resolved = LLMOptions.model_validate({**resolve_llm_options().model_dump(), **dict(options or {})})
        except ValueError as exc:
            raise EggInputError(f"egg.optimize: llm_options: {' '.join(str(exc).split())}") from None
    config = RunConfig(
        llm=spec,
        backend=Backend(backend),
        device=device,
        budget=parsed,
        principles=[str(Path(p).resolve()) for p in principles],
        shapes=shapes,
        llm_options=resolved,
    )
    return config, chat_model


def _device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def built_shape_set(problem_path: Path, shapes: str | None) -> tuple[str, dict[str, Any]]:
    """The shape set a result is built at: ``default`` when it was among those checked, else the
    first checked set (``--shapes small`` builds at ``small``); and that set's constants."""
    info = inspect_problem(problem_path)
    checked = select_shape_sets(info, shapes)
    name = DEFAULT_SHAPE_SET if DEFAULT_SHAPE_SET in checked else checked[0]
    return name, info.shape_sets[name]


@contextmanager
def _kernels_runnable_on(device: torch.device) -> Iterator[None]:
    """Triton decides at ``@triton.jit`` time whether a kernel runs in its interpreter; on a CPU
    that is the only way it runs at all, so the candidate is imported with TRITON_INTERPRET=1."""
    if device.type != "cpu" or "TRITON_INTERPRET" in os.environ:
        yield
        return
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        yield
    finally:
        os.environ.pop("TRITON_INTERPRET", None)


def load_best(problem_path: Path, best_path: Path, device: torch.device, seed: int = 0,
              constants: dict[str, Any] | None = None) -> nn.Module:
    """Construct the best candidate's ModelNew the way the harness did (same seed, same args, the
    shape set's ``constants``)."""
    problem = load_problem_module(problem_path, constants)
    with _kernels_runnable_on(device):
        candidate = import_file(best_path, "egg_best")
    torch.manual_seed(seed)
    init_inputs = problem.get_init_inputs()
    torch.manual_seed(seed)
    return candidate.ModelNew(*init_inputs).to(device)


def _reference(problem_path: Path, device: torch.device, seed: int = 0,
               constants: dict[str, Any] | None = None) -> nn.Module:
    problem = load_problem_module(problem_path, constants)
    torch.manual_seed(seed)
    return problem.Model(*problem.get_init_inputs()).to(device)


def _result(report: RunReport, problem_path: Path, run_dir: Path, device: torch.device,
            live: nn.Module | None) -> OptimizeResult:
    best_path = run_dir / "best.py"
    slower = slower_than_eager(report.best)
    shape_set, constants = built_shape_set(problem_path, report.config.get("shapes"))
    seed = report.config.get("seed", 0)
    if report.llm_failure:
        log.warning("optimize.llm_failed", reason=report.llm_failure, run_dir=str(run_dir))
    if report.best is None or not best_path.is_file() or slower is not None:
        if slower is not None:
            log.warning("optimize.kept_reference", reason=slower, run_dir=str(run_dir))
        module = live if live is not None else _reference(problem_path, device, seed, constants)
        return OptimizeResult(module, None, None, None, report, run_dir, kept_reference=slower,
                              shape_set=shape_set, llm_failure=report.llm_failure)
    module = load_best(problem_path, best_path, device, seed=seed, constants=constants)
    if live is not None:
        unbound = bind_parameters(module, live)
        if unbound:
            log.warning("optimize.unbound_parameters", names=unbound,
                        hint="the optimized module keeps its own copies of these")
    return OptimizeResult(module, best_path.read_text(encoding="utf-8"), report.speedup_vs_eager,
                          report.speedup_vs_compile, report, run_dir, shape_set=shape_set,
                          llm_failure=report.llm_failure)


def load_result(run_dir: str | Path, device: str = "auto") -> OptimizeResult:
    """The drop-in module and figures of a finished run directory (``egg optimize --out RUN_DIR``)."""
    ensure_logging()
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
    llm_options: LLMOptions | dict[str, Any] | None = None,
) -> Any:
    """Optimize a problem file or a live module; see the module docstring for the three forms.

    ``llm_options``: :class:`egg.config.LLMOptions` fields (``timeout_s``, ``max_retries``,
    ``temperature``, ``max_tokens``, ``reasoning_effort``, ``streaming``) over the ``EGG_LLM_*``
    variables.
    """
    ensure_logging()
    config, chat_model = _config(llm, backend, budget, principles, device, shapes, llm_options)
    if isinstance(target, nn.Module) and inputs is None:
        from egg.backend import optimize_module

        return optimize_module(target, chat_model, llm=config.llm, budget=config.budget, device=device,
                               backend=backend, principles=config.principles, llm_options=config.llm_options)
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
