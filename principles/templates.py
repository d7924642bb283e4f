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

from principles.schema import Template


def check_template_source(path: Path, template: Template) -> str | None:
    """Return a one-line problem with the template file (``'<field>: <message>'``), or None."""
    if not path.is_file():
        return f"path: no such file {path}"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
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
    """Import a template file as a module (cached per absolute path) and return it."""
    path = Path(path).resolve()
    # Pack directories are kebab-case, not importable names: give each file a stable unique name.
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
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
