"""Problems: the reference a candidate is judged against.

A problem is a KernelBench-format Python file::

    N = 4096                          # module-level size constants
    class Model(nn.Module): ...       # the reference
    def get_inputs(): ...             # fresh forward inputs (called once per trial, after a seed)
    def get_init_inputs(): ...        # constructor arguments

plus optional EGG fields: ``SHAPES = {"small": {"N": 64}, ...}`` (named sets of constant
overrides; the constants as written are the set ``"default"``), ``TOLERANCE`` (see
:mod:`egg.tolerance`) and ``ALLOW_TF32``. Candidates define ``ModelNew`` with the same
constructor signature. Parameters match because the harness sets the same seed before
constructing ``Model`` and ``ModelNew`` (KernelBench's convention): a candidate that creates its
parameters in the same order with the same shapes gets the same values.

This module reads a problem *statically* (AST only: no import, no torch) for validation and
metadata, and imports it at run time (in the worker) with a shape set applied.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from egg import pyast
from egg.errors import EggInputError
from egg.tolerance import resolve_tolerances

DEFAULT_SHAPE_SET = "default"
_counter = itertools.count()


class ProblemInfo(BaseModel):
    """What can be known about a problem file without running it."""

    path: Path
    name: str
    source_sha256: str
    constants: dict[str, Any]
    shape_sets: dict[str, dict[str, Any]]
    tolerance: Any = None
    allow_tf32: bool = False
    init_params: list[str]
    docstring: str | None = None


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return _NOT_LITERAL


_NOT_LITERAL = object()


def _init_params(cls: ast.ClassDef) -> list[str]:
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            args = item.args
            names = [a.arg for a in args.posonlyargs + args.args][1:]
            names += [a.arg for a in args.kwonlyargs]
            if args.vararg:
                names.append("*" + args.vararg.arg)
            if args.kwarg:
                names.append("**" + args.kwarg.arg)
            return names
    return []


def parse_source(path: Path, source: str) -> ast.Module:
    """Parse ``source``; a syntax error becomes a one-line error naming the file and line."""
    try:
        return pyast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise EggInputError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None


def class_init_params(tree: ast.Module, class_name: str) -> list[str] | None:
    """Constructor parameter names of ``class_name`` in ``tree`` (None if the class is absent)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return _init_params(node)
    return None


def inspect_problem(path: str | Path) -> ProblemInfo:
    """Validate a problem file statically and return its metadata (one-line errors, exit 2)."""
    path = Path(path)
    if not path.is_file():
        raise EggInputError(f"{path}: no such problem file (expected a KernelBench-format .py file)")
    source = path.read_text(encoding="utf-8")
    tree = parse_source(path, source)
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    init_params = class_init_params(tree, "Model")
    missing = [
        what
        for what, ok in (
            ("class Model", init_params is not None),
            ("get_inputs()", "get_inputs" in functions),
            ("get_init_inputs()", "get_init_inputs" in functions),
        )
        if not ok
    ]
    if missing:
        raise EggInputError(
            f"{path}: missing {', '.join(missing)} (expected a KernelBench problem: "
            "class Model, get_inputs(), get_init_inputs())"
        )
    constants: dict[str, Any] = {}
    shape_sets: dict[str, dict[str, Any]] = {DEFAULT_SHAPE_SET: {}}
    tolerance: Any = None
    allow_tf32 = False
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        value = _literal(node.value)
        if target.id == "SHAPES":
            shape_sets.update(_shape_sets(path, value, constants))
        elif target.id == "TOLERANCE":
            if value is _NOT_LITERAL:
                raise EggInputError(f"{path}: TOLERANCE must be a literal number or dict")
            resolve_tolerances(value, origin=f"{path}: TOLERANCE")
            tolerance = value
        elif target.id == "ALLOW_TF32":
            allow_tf32 = bool(value) if value is not _NOT_LITERAL else False
        elif value is not _NOT_LITERAL and isinstance(value, (int, float, str, bool, tuple, list)):
            constants[target.id] = value
    return ProblemInfo(
        path=path.resolve(),
        name=path.stem,
        source_sha256=hashlib.sha256(source.encode()).hexdigest(),
        constants=constants,
        shape_sets=shape_sets,
        tolerance=tolerance,
        allow_tf32=allow_tf32,
        init_params=init_params or [],
        docstring=ast.get_docstring(tree),
    )


def _shape_sets(path: Path, value: Any, constants: dict[str, Any]) -> dict[str, dict[str, Any]]:
    if value is _NOT_LITERAL or not isinstance(value, dict):
        raise EggInputError(f"{path}: SHAPES must be a literal dict of name -> {{CONSTANT: value}}")
    sets: dict[str, dict[str, Any]] = {}
    for name, overrides in value.items():
        if not isinstance(name, str) or not isinstance(overrides, dict):
            raise EggInputError(f"{path}: SHAPES[{name!r}] must map constant names to values")
        unknown = [k for k in overrides if k not in constants]
        if unknown:
            raise EggInputError(
                f"{path}: SHAPES[{name!r}] overrides {', '.join(map(str, unknown))}, "
                "which are not module-level constants defined above SHAPES"
            )
        sets[name] = dict(overrides)
    return sets


def select_shape_sets(info: ProblemInfo, spec: str | None) -> list[str]:
    """Resolve ``--shapes`` (None, ``all``, a name, or a comma list) to shape-set names."""
    if spec is None or spec == "":
        return [DEFAULT_SHAPE_SET]
    if spec == "all":
        return list(info.shape_sets)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [n for n in names if n not in info.shape_sets]
    if unknown:
        raise EggInputError(
            f"--shapes: {', '.join(unknown)} not declared by {info.path.name} "
            f"(declared: {', '.join(info.shape_sets)}, or 'all')"
        )
    return names


def import_file(path: str | Path, prefix: str) -> ModuleType:
    """Import a Python file as a fresh module with a unique name (so @triton.jit sees a real file)."""
    path = Path(path).resolve()
    name = f"{prefix}_{path.stem}_{next(_counter)}".replace("-", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EggInputError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_problem_module(path: str | Path, overrides: dict[str, Any] | None = None) -> ModuleType:
    """Import a problem file and apply a shape set's constant overrides.

    ``get_inputs``/``get_init_inputs`` read module globals when called, so setting the constants
    on the module after import is enough for KernelBench-style problems.
    """
    module = import_file(path, "egg_problem")
    for key, value in (overrides or {}).items():
        setattr(module, key, value)
    return module
