"""Launch states: the one module-level state the static checks allow a candidate to keep.

A generated launcher keeps the ``CompiledKernel`` its first GPU launch returned and relaunches it
directly (:mod:`agents.expert.templates.launch`). That is state kept across calls, which the
``global-cache`` rule otherwise rejects, so it is accepted in exactly one form, recognised from the
file alone. A module-level name ``S`` is a launch state when:

* at module level it is only ever assigned ``None``;
* inside functions (under ``global S``) it is only ever assigned
  ``(torch.cuda.current_device(), K[grid](...))``, where ``K`` is a ``@triton.jit`` function of the
  file: a device index and the value a launch returns, so nothing the candidate computed;
* every other use of ``S`` is ``S is None`` / ``S is not None``, ``S[0]`` compared with something,
  or ``S[1][grid](...)``: it is never returned, passed, iterated, sliced, or written through.

Its contents are then a function of the call site alone (the kernel, its literal shapes and
launch options, the device), never of input values, so it cannot serve as an output cache. The
runtime defences do not depend on this: fresh inputs before every timed call, every timed output
checked, and the ablation call (a launch through ``S[1]`` passes the same ``CompiledKernel.run``
choke point as any other, so it is counted and poisoned alike).
"""

from __future__ import annotations

import ast

from egg.evaluate.source_index import FUNCS, SourceIndex


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _jit_functions(src: SourceIndex) -> set[str]:
    """Module-level ``@triton.jit`` functions whose name is bound nowhere else (a kernel name
    rebound to a cache object would make ``K[grid](...)`` return what the cache likes)."""
    defined: dict[str, int] = {}
    jit = set()
    for node in ast.walk(src.tree):
        if isinstance(node, (*FUNCS, ast.ClassDef)):
            defined[node.name] = defined.get(node.name, 0) + 1
    for node in src.tree.body:
        if isinstance(node, FUNCS):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if src.qualname(target) in {"triton.jit", "triton.runtime.jit"}:
                    jit.add(node.name)
    stored = {n.id for n in ast.walk(src.tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    stored |= {a.asname or a.name for n in ast.walk(src.tree) if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in n.names}
    stored |= {a.arg for a in ast.walk(src.tree) if isinstance(a, ast.arg)}
    return {name for name in jit if defined.get(name) == 1 and name not in stored}


def _is_state_value(src: SourceIndex, value: ast.AST | None, jit: set[str]) -> bool:
    """``(torch.cuda.current_device(), K[grid](...))`` with ``K`` a @triton.jit function of the file."""
    if not isinstance(value, ast.Tuple) or len(value.elts) != 2:
        return False
    device, launch = value.elts
    return (isinstance(device, ast.Call) and not device.args and not device.keywords
            and src.qualname(device.func) == "torch.cuda.current_device"
            and isinstance(launch, ast.Call) and isinstance(launch.func, ast.Subscript)
            and isinstance(launch.func.value, ast.Name) and launch.func.value.id in jit)


def _allowed_load(name: ast.Name, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(name))
    if isinstance(parent, ast.Compare):  # S is None / S is not None
        others = [parent.left, *parent.comparators]
        return (len(others) == 2 and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops)
                and any(isinstance(o, ast.Constant) and o.value is None for o in others))
    if not (isinstance(parent, ast.Subscript) and parent.value is name and isinstance(parent.slice, ast.Constant)):
        return False
    outer = parents.get(id(parent))
    if parent.slice.value == 0:  # S[0] == torch.cuda.current_device()
        return isinstance(outer, ast.Compare) and len(outer.ops) == 1 and isinstance(outer.ops[0], (ast.Eq, ast.NotEq))
    if parent.slice.value == 1:  # S[1][grid](...)
        call = parents.get(id(outer))
        return isinstance(outer, ast.Subscript) and outer.value is parent and isinstance(call, ast.Call) \
            and call.func is outer
    return False


def launch_states(src: SourceIndex) -> set[str]:
    """The module-level names of ``src`` that are launch states (see the module docstring)."""
    jit = _jit_functions(src)
    if not jit:
        return set()
    parents = _parents(src.tree)
    candidates: dict[str, bool] = {}
    for node in src.tree.body:  # module level: only `S = None`
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            ok = isinstance(node.value, ast.Constant) and node.value.value is None
            candidates[name] = candidates.get(name, True) and ok
    names = {n for n, ok in candidates.items() if ok}
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Name) and node.id in names:
            parent = parents.get(id(node))
            if isinstance(node.ctx, ast.Store):
                at_module = isinstance(parent, ast.Assign) and parent in src.tree.body
                if not at_module and not (isinstance(parent, ast.Assign) and len(parent.targets) == 1
                                          and _is_state_value(src, parent.value, jit)):
                    names.discard(node.id)
            elif isinstance(node.ctx, ast.Del) or (isinstance(node.ctx, ast.Load) and not _allowed_load(node, parents)):
                names.discard(node.id)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            names.discard(node.target.id)
        elif isinstance(node, (ast.Nonlocal,)):
            names -= set(node.names)
    return names
