"""The ``egg`` TorchDynamo backend: ``torch.compile(model, backend="egg")``.

Dynamo captures the model (control flow, ``transformers`` modules, graph breaks: several
graphs) and its guards decide when a compiled graph is reused. For every graph it hands over,
the backend:

1. runs it as captured, with one warning, when it needs autograd (grad mode on and an input or
   parameter requiring grad: EGG optimises inference);
2. captures it as canonical ATen (``egg.capture.capture_graph``) and writes it as a graph
   problem (``egg.capture.write``) under the cache, keyed by the canonical graph's code, its
   input specs, the device, the agents and the EGG version;
3. optimises that problem like any other (``egg.run.run_optimization``: the judge, offline
   expert agents by default), or reads the finished run from the cache;
4. calls the best candidate's ``ModelNew`` from then on, or the graph itself when nothing was
   accepted (or the best is slower than eager on a GPU), with a warning naming why.

A graph with nothing to compute, or one the capture cannot take (a graph that updates its
inputs in place, BatchNorm statistics in training), stays as captured, with the reason logged.
A call whose shapes, dtypes or strides differ from the examples (Dynamo's dynamic shapes) is
optimised for its own signature on first use.

Options, as ``torch.compile(model, backend="egg", options={...})`` or
``egg.backend.egg_backend(**options)``: ``llm`` (``"none"``, ``PROVIDER:MODEL``, ...),
``budget`` (a ``--budget`` string, a dict or a ``Budget``), ``device`` (``"auto"``: the
examples' device), ``backend`` (``"triton"``/``"cuda"``), ``principles`` (pack paths) and
``cache_dir`` (default ``EGG_CACHE_DIR``/``~/.cache/egg``, graphs under ``graphs/``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import structlog
import torch
from pydantic import BaseModel, ConfigDict
from torch import fx, nn

from egg import __version__, register_dynamo_backend
from egg.capture import CapturedGraph, CaptureError, capture_graph
from egg.capture.opset import category
from egg.capture.write import write_graph_problem
from egg.config import Budget, LLMOptions, RunConfig, default_budget, parse_budget
from egg.vocabulary import Backend

log = structlog.get_logger(__name__)

CompiledFn = Callable[..., Any]


class BackendOptions(BaseModel):
    """What ``torch.compile(..., backend="egg", options=...)`` accepts (see the module doc)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    llm: str = "none"
    budget: Budget | dict[str, Any] | str | None = None
    device: str = "auto"
    backend: str = "triton"
    principles: list[str] = []
    cache_dir: str | None = None
    llm_options: LLMOptions | dict[str, Any] | None = None

    def run_config(self, device: str) -> RunConfig:
        if isinstance(self.budget, Budget):
            budget = self.budget
        elif isinstance(self.budget, dict):
            budget = Budget.model_validate(self.budget)
        else:
            budget = parse_budget(self.budget, default_budget(self.llm))
        return RunConfig(
            llm=self.llm,
            backend=Backend(self.backend),
            device=device,
            budget=budget,
            principles=[str(Path(p).resolve()) for p in self.principles],
            llm_options=LLMOptions.model_validate(self.llm_options or {}),
        )


def _cache_root(options: BackendOptions) -> Path:
    if options.cache_dir:
        return Path(options.cache_dir)
    from egg.config import cache_root

    return cache_root()


def _signature(args: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(
        ("tensor", tuple(a.shape), str(a.dtype), tuple(a.stride()), a.device.type)
        if isinstance(a, torch.Tensor)
        else ("value", repr(a))
        for a in args
    )


def _needs_autograd(args: Sequence[Any]) -> bool:
    return torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)


def _computes(captured: CapturedGraph) -> bool:
    return any(category(n.target) not in ("view", "select_output") for n in captured.call_nodes())


class EggGraph:
    """The callable a Dynamo graph compiles to: per input signature, a candidate or the graph."""

    def __init__(self, gm: fx.GraphModule, options: BackendOptions, chat_model: Any = None) -> None:
        self.gm = gm
        self.options = options
        self.chat_model = chat_model
        self.compiled: dict[tuple[Any, ...], CompiledFn] = {}

    def __call__(self, *args: Any) -> Any:
        key = _signature(args)
        if key not in self.compiled:
            self.compiled[key] = self.prepare(list(args))
        return self.compiled[key](*args)

    def keep(self, reason: str, **fields: Any) -> CompiledFn:
        log.warning("backend.graph_kept", reason=reason, **fields)
        return self.gm.forward

    def prepare(self, args: list[Any]) -> CompiledFn:
        """Optimise the graph for the signature of ``args`` (cached), or keep it with a reason."""
        if _needs_autograd(args):
            return self.keep("the graph needs autograd (grad mode is on and an input or parameter requires "
                             "grad): it runs as captured; EGG optimises inference (use torch.no_grad())")
        try:
            captured = capture_graph(self.gm, args)
        except CaptureError as exc:
            return self.keep(f"capture failed: {exc}")
        if not _computes(captured):
            return self.keep("nothing to optimise: the graph only reshapes or selects")
        device = self.options.device
        if device == "auto":
            device = next((a.device.type for a in args if isinstance(a, torch.Tensor)), "cpu")
        key = self.cache_key(captured, device)
        folder = _cache_root(self.options) / "graphs" / key
        try:
            return self.load_or_optimise(captured, args, folder, device)
        except CaptureError as exc:
            return self.keep(f"the graph cannot be written as a problem: {exc}", key=key)

    def cache_key(self, captured: CapturedGraph, device: str) -> str:
        payload = {
            "graph": captured.gm.code,
            "inputs": [[g.kind, list(g.shape), str(g.dtype), list(g.stride)] for g in captured.inputs],
            "scalars": [[name, repr(value)] for name, _, value in captured.scalar_inputs],
            "device": device,
            "egg": __version__,
            "llm": self.options.llm,
            "backend": self.options.backend,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]

    def load_or_optimise(self, captured: CapturedGraph, args: list[Any], folder: Path, device: str) -> CompiledFn:
        from egg.api import load_best
        from egg.report.model import RunReport, slower_than_eager
        from egg.run import run_optimization

        run_dir = folder / "run"
        if (run_dir / "report.json").is_file():
            log.info("backend.cache_hit", folder=str(folder))
            report = RunReport.model_validate_json((run_dir / "report.json").read_text())
        else:
            if folder.exists():
                log.warning("backend.unfinished_run_restarted", folder=str(folder))
                shutil.rmtree(folder)
            problem = write_graph_problem(captured, args, folder / "problem")
            log.info("backend.optimising", folder=str(folder), ops=len(captured.call_nodes()))
            report = run_optimization(problem, self.options.run_config(device), run_dir, chat_model=self.chat_model)
        slower = slower_than_eager(report.best)
        if report.best is None or not (run_dir / "best.py").is_file() or slower is not None:
            why = slower or "no candidate was accepted: " + "; ".join(
                f"{r.get('id') or r.get('agent', '?')}: {' '.join(map(str, r.get('reasons') or []))}"[:200]
                for r in report.rejected[:3]
            )
            return self.keep(why, run_dir=str(run_dir))
        model = load_best(run_dir / "problem.py", run_dir / "best.py", torch.device(device),
                          seed=report.config.get("seed", 0))
        positions = [int(g.target) for g in captured.inputs if g.kind != "constant"]
        single = len(captured.outputs) == 1
        log.info("backend.optimised", run_dir=str(run_dir), speedup_vs_eager=report.speedup_vs_eager)

        def run(*call_args: Any) -> Any:
            result = model(*(call_args[i] for i in positions))
            return (result,) if single else tuple(result)

        return run


def egg_backend(chat_model: Any = None, **options: Any) -> Callable[[fx.GraphModule, list[Any]], CompiledFn]:
    """A Dynamo backend with these options (``torch.compile(model, backend=egg_backend(...))``).

    ``chat_model``: a LangChain chat model for the LLM agents (tests script one).
    """
    parsed = BackendOptions.model_validate(options)

    def compile_graph(gm: fx.GraphModule, example_inputs: list[Any], **_: Any) -> CompiledFn:
        graph = EggGraph(gm, parsed, chat_model)
        graph.compiled[_signature(example_inputs)] = graph.prepare(list(example_inputs))
        return graph

    return compile_graph


def egg_dynamo_backend(
    gm: fx.GraphModule, example_inputs: list[Any], options: dict[str, Any] | None = None, **_: Any
) -> CompiledFn:
    """The backend registered as ``"egg"``: ``torch.compile(model, backend="egg", options=...)``."""
    return egg_backend(**(options or {}))(gm, example_inputs)


def optimize_module(module: nn.Module, chat_model: Any = None, **options: Any) -> nn.Module:
    """``torch.compile(module, backend=egg_backend(...))``: what ``egg.optimize(module)`` returns."""
    return torch.compile(module, backend=egg_backend(chat_model=chat_model, **options))


register_dynamo_backend()  # an import of egg.backend makes backend="egg" available
