"""What the static checks know about a candidate file: its import aliases, bound names, the
functions it defines and the handles of the extensions it builds (:class:`SourceIndex`).

Kept apart from the rules in :mod:`egg.evaluate.static_checks` so each rule reads as a short
description of one trick, and the name resolution they share lives in one place.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from pydantic import BaseModel

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
LOAD_FUNCS = {"torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load"}


class Finding(BaseModel):
    """One static-check hit: which rule, where, and what exactly was found."""

    rule: str
    line: int
    message: str

    def reason(self) -> str:
        return f"static check '{self.rule}' (line {self.line}): {self.message}"


def snippet(node: ast.AST, limit: int = 70) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def own_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """Nodes of ``root``'s body, not descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*FUNCS, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def assign_targets(node: ast.AST) -> list[ast.expr]:
    """Flattened store targets of an assignment-like statement."""
    raw: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        raw = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and (node.value is not None or isinstance(node, ast.AugAssign)):
        raw = [node.target]
    elif isinstance(node, ast.Delete):
        raw = list(node.targets)
    flat: list[ast.expr] = []
    while raw:
        t = raw.pop()
        if isinstance(t, (ast.Tuple, ast.List)):
            raw.extend(t.elts)
        elif isinstance(t, ast.Starred):
            raw.append(t.value)
        else:
            flat.append(t)
    return flat


def root_of(node: ast.expr) -> ast.expr:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def self_key(node: ast.expr) -> str | None:
    """``name`` or ``self.attr`` for the expressions an extension handle is stored in."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None


class SourceIndex:
    """The parsed file plus what the rules share: import aliases, module names, extension handles."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.bound: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
            elif isinstance(node, (*FUNCS, ast.ClassDef)):
                self.bound.add(node.name)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.bound.add(node.id)
        self.imported = set(self.aliases)
        # `Event = torch.cuda.Event` makes `Event` an alias too, but only for a name whose every
        # binding is such an assignment: `x = torch.float32` then `x = tensor` is not an alias.
        simple = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1
                  and isinstance(n.targets[0], ast.Name) and isinstance(n.value, (ast.Name, ast.Attribute))]
        simple_targets = {id(n.targets[0]) for n in simple}
        rebound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                   and id(n) not in simple_targets}
        rebound |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
        for _ in range(2):
            for node in simple:
                name = node.targets[0].id  # type: ignore[union-attr]
                if name not in rebound and (q := self.qualname(node.value)):
                    self.aliases[name] = q
        self.module_names = {t.id for n in tree.body for t in assign_targets(n) if isinstance(t, ast.Name)}
        self.module_names |= {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        self.module_names -= self.imported
        self.functions = [n for n in ast.walk(tree) if isinstance(n, FUNCS)]
        self.builders = {f.name for f in self.functions if self._returns_build(f)}
        self.ext_keys: set[str] = set()
        self.ext_funcs: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and self.is_build(node.value):
                self.ext_keys |= {k for t in node.targets if (k := self_key(t))}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
                if self_key(node.value.value) in self.ext_keys:
                    self.ext_funcs |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        self.launchers = self._launching_functions()

    def qualname(self, node: ast.AST) -> str | None:
        """Dotted name an expression refers to through the imports, or None."""
        if isinstance(node, ast.Name):
            return "builtins" if node.id == "__builtins__" else self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return f"{base}.{node.attr}" if base else None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)):
            base = self.qualname(node.args[0])
            return f"{base}.{node.args[1].value}" if base else None
        return None

    def builtin(self, node: ast.AST) -> str | None:
        """Name of a builtin that ``node`` refers to (a bare name the file never binds)."""
        if isinstance(node, ast.Name) and node.id not in self.bound and node.id not in self.aliases:
            return node.id
        return self.qualname(node)

    def is_build(self, node: ast.AST | None) -> bool:
        """A load_inline/load call, or a call to a local function that returns one."""
        if not isinstance(node, ast.Call):
            return False
        if self.qualname(node.func) in LOAD_FUNCS:
            return True
        return isinstance(node.func, ast.Name) and node.func.id in self.builders

    def _returns_build(self, func: ast.AST) -> bool:
        nodes = list(own_nodes(func))
        has_build = any(isinstance(n, ast.Call) and self.qualname(n.func) in LOAD_FUNCS for n in nodes)
        return has_build and any(isinstance(n, ast.Return) and n.value is not None for n in nodes)

    def is_launch(self, call: ast.Call) -> bool:
        """``kernel[grid](...)`` or a call into a load_inline extension."""
        func = call.func
        if isinstance(func, ast.Subscript):
            return True
        if isinstance(func, ast.Name):
            return func.id in self.ext_funcs
        if isinstance(func, ast.Attribute):
            return self_key(func.value) in self.ext_keys or self.is_build(func.value)
        return False

    def _launching_functions(self) -> set[str]:
        names: set[str] = set()
        changed = True
        while changed:
            changed = False
            for f in self.functions:
                if f.name not in names and any(self.launches_in(n, names) for n in own_nodes(f)):
                    names.add(f.name)
                    changed = True
        return names

    def launches_in(self, node: ast.AST, launchers: set[str] | None = None) -> bool:
        if not isinstance(node, ast.Call):
            return False
        launchers = self.launchers if launchers is None else launchers
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return self.is_launch(node) or called in launchers
