"""Reference templates: checking their source statically and importing them.

A template is a Triton file inside a pack. Validation reads it with :mod:`ast` only (loading a
pack never runs its code): the launcher named by ``entry`` must exist, and every documented
parameter must be a parameter of the launcher and be described in the module docstring, so the
YAML and the file cannot drift apart silently.

Importing happens only when an agent or a test asks for the kernel (:func:`import_template`).
Triton's ``@triton.jit`` needs the source in a real file, which is why templates are files and are
imported by path rather than ``exec``'d.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from egg.errors import EggInputError
from principles.decisions import TEMPLATE_CONTRACT
from principles.schema import Template
from egg import pyast

if TYPE_CHECKING:
    from principles.packset import PackSet


def check_template_source(path: Path, template: Template) -> str | None:
    """Return a one-line problem with the template file (``'<field>: <message>'``), or None."""
    if not path.is_file():
        return f"path: no such file {path}"
    try:
        tree = pyast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        return f"path: {path}:{line}: cannot parse: {getattr(exc, 'msg', exc)}"
    launcher = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == template.entry), None
    )
    if launcher is None:
        return f"entry: no top-level function {template.entry!r} in {path.name}"
    args = launcher.args
    accepted = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    docstring = ast.get_docstring(tree) or ""
    for param in template.parameters:
        if param.name not in accepted and args.kwarg is None:
            return f"parameters.{param.name}: not a parameter of {template.entry}() in {path.name}"
        if param.name not in docstring:
            return f"parameters.{param.name}: not described in the module docstring of {path.name}"
    return None


def import_template(path: str | Path) -> ModuleType:
    """Import a template file as a module (cached per absolute path and content) and return it."""
    path = Path(path).resolve()
    # Pack directories are kebab-case, not importable names: give each file a stable unique name;
    # the content is part of it, so an edited file is imported afresh, never served stale.
    digest = hashlib.sha1(str(path).encode() + path.read_bytes()).hexdigest()[:10]
    name = f"egg_template_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import template {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_kernel_template(packs: PackSet, ref: str) -> Any:
    """Import a pack's kernel template (``'<pack>/<name>'``) and return its template object.

    The object must follow the expert's Template contract (:data:`TEMPLATE_CONTRACT`) and be
    named by its reference, so configs, memory and decisions all call it the same. Anything else
    is a one-line EggInputError naming the pack file and the template.
    """
    template, path = packs.kernel_template(ref)
    where = f"{packs.kernel_template_source(ref)}: kernel template {template.name}"
    return instantiate_template(path, template.object, ref, where)


def instantiate_template(path: str | Path, object_name: str, ref: str, where: str | None = None) -> Any:
    """The template object ``object_name`` of the module at ``path``, contract-checked; ``where``
    starts each one-line error (default: the module path and ``ref``). What
    :func:`load_kernel_template` and the expert agents (from a resolved ``TemplateChoice``) use."""
    path = Path(path)
    where = where or f"{path}: kernel template {ref}"
    try:
        module = import_template(path)
    except Exception as exc:  # noqa: BLE001 - a user's module may fail in any way; report it as one line
        raise EggInputError(f"{where}: module: importing {path.name} failed: {type(exc).__name__}: {exc}") from None
    obj = getattr(module, object_name, None)
    if obj is None:
        raise EggInputError(f"{where}: object: {path.name} defines no {object_name!r} after import")
    if isinstance(obj, type):  # a class: the contract is met by an instance
        try:
            obj = obj()
        except Exception as exc:  # noqa: BLE001
            raise EggInputError(f"{where}: object: {object_name}() failed: {type(exc).__name__}: {exc}") from None
    missing = [m for m in TEMPLATE_CONTRACT if not callable(getattr(obj, m, None))]
    if missing:
        raise EggInputError(f"{where}: object: {object_name} lacks {', '.join(m + '()' for m in missing)} "
                            "of the template contract")
    if getattr(obj, "name", None) != ref:
        raise EggInputError(f"{where}: object: its name is {getattr(obj, 'name', None)!r}, expected {ref!r} "
                            "(a pack's template is named '<pack>/<name>')")
    return obj
