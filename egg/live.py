"""Live modules: turning an ``nn.Module`` plus example inputs into a problem file, and back.

``egg.optimize(module, inputs)`` works on problem files like everything else. This module writes
one for a live module: the source of the module's class (and the module-level classes and
functions it uses, with its file's imports), a ``Model`` that holds the live module unpickled
from ``live_module.pt`` (so the reference computes with the user's actual weights), and a
``get_inputs`` that draws fresh random inputs with the example inputs' shapes, strides, dtypes
and integer ranges (:mod:`egg.inputs`, as graph problems do).
Classes defined in the user's ``__main__`` resolve to the copies in the problem file, so the
worker never re-runs the user's script.

:func:`bind_parameters` makes an optimized module use *the live module's* parameter and buffer
objects, so weights trained or loaded later are the ones the kernels read.
"""

from __future__ import annotations

import ast
import inspect
import json
import pickle
import textwrap
import types
from pathlib import Path
from typing import Any

import torch
from torch import nn

from egg import pyast
from egg.errors import EggInputError
from egg.inputs import input_spec, inputs_source, specs_json

MODULE_FILE = "live_module.pt"
INPUTS_FILE = "live_inputs.json"


def _module_level_defs(tree: ast.Module) -> dict[str, ast.stmt]:
    return {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def module_source(cls: type) -> str:
    """Imports of the class's file + the class + the module-level defs it uses (transitively)."""
    try:
        path = inspect.getsourcefile(cls)
        file_source = Path(path).read_text(encoding="utf-8") if path else None
    except (TypeError, OSError):
        file_source = None
    if file_source is None:
        try:
            return textwrap.dedent(inspect.getsource(cls))
        except (TypeError, OSError):
            raise EggInputError(
                f"egg.optimize: the source of {cls.__qualname__} is not available (defined interactively?); "
                "write it to a .py file or pass a KernelBench problem file"
            ) from None
    tree = pyast.parse(file_source)
    defs = _module_level_defs(tree)
    if cls.__name__ not in defs:
        return textwrap.dedent(inspect.getsource(cls))
    wanted, todo = set(), [cls.__name__]
    while todo:
        name = todo.pop()
        if name in wanted or name not in defs:
            continue
        wanted.add(name)
        todo += sorted(_names(defs[name]) - wanted)
    lines = file_source.splitlines()
    parts = [ast.get_source_segment(file_source, n) or "" for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    for node in tree.body:
        if getattr(node, "name", None) in wanted:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            parts.append("\n".join(lines[start - 1 : node.end_lineno]))
    return "\n\n".join(parts)


def _input_specs(inputs: list[Any]) -> list[dict[str, Any]]:
    for value in inputs:
        if not isinstance(value, (torch.Tensor, int, float, bool, str)) and value is not None:
            raise EggInputError(f"egg.optimize: unsupported input of type {type(value).__name__} (tensors and scalars only)")
    return [input_spec(value) for value in inputs]


def write_live_problem(module: nn.Module, inputs: list[Any], folder: Path) -> Path:
    """Write ``folder/problem.py`` (+ the pickled module and input spec) for a live module."""
    folder.mkdir(parents=True, exist_ok=True)
    cls = type(module)
    source = module_source(cls)
    torch.save(module, folder / MODULE_FILE)
    specs = _input_specs(list(inputs))
    (folder / INPUTS_FILE).write_text(json.dumps(specs_json(specs)))  # for people and tools; the file has its own copy
    params = ", ".join(f"x{i}" for i in range(len(list(inputs))))
    problem = f'''"""Problem written by egg.optimize for a live {cls.__qualname__} (weights in {MODULE_FILE})."""

{source}


# --- added by egg.optimize: the reference is the live module itself ---
import egg.live as _egg_live
import torch
import torch.nn as _egg_nn

# ModelNew() takes no arguments; the harness binds the live module's parameters and buffers into
# it by name (relative to the live module, e.g. "weight", "layer.bias") and shape.
BIND_PARAMETERS = True


class Model(_egg_nn.Module):
    def __init__(self):
        super().__init__()
        self.module = _egg_live.load_module({str((folder / MODULE_FILE).resolve())!r}, globals())

    def forward(self, {params}):
        return self.module({params})


{inputs_source(specs, prefix="_egg_")}
def get_init_inputs():
    return []
'''
    path = folder / "problem.py"
    path.write_text(problem, encoding="utf-8")
    return path


def _pickle_module(namespace: dict[str, Any]) -> Any:
    """A stand-in for the ``pickle`` module whose Unpickler resolves ``__main__`` classes to
    ``namespace`` (the problem file's copies); ``torch.load`` subclasses its ``Unpickler``."""

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if module in ("__main__", "__mp_main__") and name in namespace:
                return namespace[name]
            try:
                return super().find_class(module, name)
            except (ImportError, AttributeError):
                if name in namespace:
                    return namespace[name]
                raise

    return types.SimpleNamespace(
        __name__="egg_live_pickle",
        Unpickler=Unpickler,
        load=lambda file, **kw: Unpickler(file, **kw).load(),
    )


def load_module(module_file: str, namespace: dict[str, Any]) -> nn.Module:
    return torch.load(module_file, weights_only=False, pickle_module=_pickle_module(namespace), map_location="cpu")


def bind_parameters(optimized: nn.Module, live: nn.Module) -> list[str]:
    """Make ``optimized`` use ``live``'s parameter and buffer objects; returns names left unbound.

    Names match directly, or after dropping the ``module.`` prefix that the generated ``Model``
    adds; a parameter with no match keeps its seeded copy (reported to the caller).
    """
    def norm(name: str) -> str:
        return name.removeprefix("module.")

    live_params = {norm(k): v for k, v in live.named_parameters()}
    live_buffers = {norm(k): v for k, v in live.named_buffers()}
    unbound = []

    def resolve(name: str, table: dict[str, torch.Tensor]) -> torch.Tensor | None:
        return table.get(norm(name))

    for name, param in list(optimized.named_parameters()):
        target = resolve(name, live_params)
        if target is None or target.shape != param.shape:
            unbound.append(name)
            continue
        owner, attr = _owner(optimized, name)
        owner._parameters[attr] = target  # noqa: SLF001 - rebinding is the point
    for name, buf in list(optimized.named_buffers()):
        target = resolve(name, live_buffers)
        if target is None or target.shape != buf.shape:
            unbound.append(name)
            continue
        owner, attr = _owner(optimized, name)
        owner._buffers[attr] = target  # noqa: SLF001
    return unbound


def _owner(root: nn.Module, dotted: str) -> tuple[nn.Module, str]:
    *path, attr = dotted.split(".")
    module = root
    for part in path:
        module = getattr(module, part)
    return module, attr
