"""Static anti-cheat checks: read a candidate's AST (never run it) for ways to game the harness.

Each rule names a family of tricks that can make a wrong or slow candidate look right or fast:

* ``patch``: rebinding attributes of imported modules (timers, the harness, precision switches).
* ``concurrency``: threads, processes, signals: work that runs outside the timed region.
* ``stream``: CUDA streams/events, in Python or in inline CUDA C++, that escape the caller's stream.
* ``fallback``: a ``try`` that swallows a kernel failure and quietly computes with PyTorch instead.
* ``global-cache``: state kept across calls (module dicts, ``global``, ``lru_cache``, ``self`` in
  ``forward``): a candidate could return the previous result instead of computing. The one state
  allowed is a launcher's launch state, recognised by its form (:mod:`egg.evaluate.launch_state`).
* ``introspection``: gc/inspect/ctypes/frames/eval/file I/O: ways to find the reference's outputs.
* ``library-compiler``: ``torch.compile``/dynamo/inductor inside the candidate: inductor's own
  generated Triton kernels would pass for the candidate's.
* ``import``, ``computed-attr``, ``subclass`` and the widened ``patch``/``introspection``/
  ``global-cache`` families: :mod:`egg.evaluate.static_rules`.

These checks are defence in depth: the verdict is decided in the judge process, which never runs
candidate code (README, *The evaluator*); they turn a cheat into a one-line reason before it runs.

The checks resolve names through the file's imports (``import torch as T``, ``from torch.cuda
import Event``), so aliases do not hide a call. They are deliberately narrow on honest idioms
(``@triton.jit`` bodies, ``triton.cdiv``, module-level ``load_inline``, ``self.weight`` in
``__init__``), because a false positive rejects a good kernel.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Literal

from egg import pyast
from egg.evaluate.launch_state import launch_states
from egg.evaluate.source_index import FUNCS as _FUNCS
from egg.evaluate.source_index import LOAD_FUNCS, Finding, assign_targets, own_nodes, root_of, self_key, snippet
from egg.evaluate.source_index import SourceIndex as _Source
from egg.evaluate.static_rules import widened_rules

Backend = Literal["triton", "cuda", "pytorch"]
_CONCURRENCY_MODULES = {"threading", "_thread", "multiprocessing", "concurrent", "subprocess",
                        "asyncio", "signal", "pty", "joblib", "torch.multiprocessing"}
_OS_PROCESS = re.compile(r"^os\.(fork|forkpty|system|popen|spawn\w*|exec\w*|posix_spawn\w*|register_at_fork)$")
_INTROSPECTION_MODULES = {"gc", "inspect", "ctypes", "importlib", "marshal", "dis"}
_INTROSPECTION_NAMES = {"sys._getframe", "sys.modules", "sys.settrace", "sys.setprofile",
                        "sys._current_frames", "builtins.open", "io.open", "os.open", "torch.load",
                        "torch.save", "numpy.load", "numpy.save", "numpy.fromfile", "builtins.__import__"}
_INTROSPECTION_BUILTINS = {"eval", "exec", "compile", "open", "__import__"}
_FRAME_ATTRS = {"f_back", "f_globals", "f_locals", "gi_frame", "tb_frame", "__globals__", "__subclasses__"}
_FILE_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes"}
_STREAM_NAMES = {"torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream", "torch.cuda.ExternalStream",
                 "torch.cuda.StreamContext", "torch.Stream", "torch.cuda.Event", "torch.Event",
                 "torch.cuda.streams.Stream", "torch.cuda.streams.ExternalStream"}
_STREAM_METHODS = {"wait_stream", "wait_event", "set_stream"}
_CPP_STREAM = re.compile(r"\b(cudaStreamCreate\w*|cudaStreamWaitEvent|cudaEventCreate\w*|cudaStreamPerThread"
                         r"|cudaStreamNonBlocking)\b|(--?default-stream)(?![= ]+legacy)")
_LAUNCH = re.compile(r"<<<(.*?)>>>", re.DOTALL)
_CURRENT_STREAM = re.compile(r"^(?:(?:at|c10)::cuda::)?getCurrentCUDAStream\s*\([^;]*\)(?:\.stream\(\))?$")
_MUTATORS = {"update", "setdefault", "append", "extend", "add", "__setitem__", "insert", "appendleft"}
_CACHE_DECORATORS = {"functools.lru_cache", "functools.cache", "functools.cached_property"}
_PRECISION_SETTERS = {"torch.set_float32_matmul_precision", "torch.set_default_dtype",
                      "torch.set_default_tensor_type", "torch.set_flush_denormal"}
_BENIGN_ENV = {"TORCH_CUDA_ARCH_LIST", "MAX_JOBS"}


def check_candidate_source(source: str, filename: str = "candidate.py") -> list[Finding]:
    """All static-check findings for a candidate file, sorted by line ([] if it does not parse)."""
    try:
        tree = pyast.parse(source, filename=filename)
    except (SyntaxError, ValueError):
        return []
    src = _Source(tree)
    found: dict[tuple[str, int, str], Finding] = {}
    for rule in (_patch, _concurrency, _stream, _fallback, _global_cache, _introspection, _library_compiler,
                 widened_rules):
        for f in rule(src):
            found.setdefault((f.rule, f.line, f.message), f)
    return sorted(found.values(), key=lambda f: (f.line, f.rule, f.message))


def detect_backend(source: str) -> Backend:
    """``triton`` if a kernel is decorated with triton.jit/autotune, ``cuda`` if load_inline/load
    builds an extension, else ``pytorch``."""
    try:
        src = _Source(pyast.parse(source))
    except (SyntaxError, ValueError):
        return "pytorch"
    triton_decorators = {"triton.jit", "triton.autotune", "triton.runtime.jit.jit"}
    for f in src.functions:
        for dec in f.decorator_list:
            if src.qualname(dec.func if isinstance(dec, ast.Call) else dec) in triton_decorators:
                return "triton"
    calls = [n for n in ast.walk(src.tree) if isinstance(n, ast.Call)]
    if any(src.qualname(c.func) in triton_decorators for c in calls):
        return "triton"
    if any(src.qualname(c.func) in LOAD_FUNCS for c in calls):
        return "cuda"
    return "pytorch"


# -- rules ---------------------------------------------------------------------------------------


def _patch(src: _Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        for t in assign_targets(node):
            if isinstance(t, ast.Attribute) and (q := src.qualname(t)):
                verb = "deletes" if isinstance(node, ast.Delete) else "assigns to"
                yield Finding(rule="patch", line=node.lineno, message=f"{verb} {q}{_patch_why(q)}")
            elif isinstance(t, ast.Subscript) and (q := src.qualname(t.value)):
                key = t.slice.value if isinstance(t.slice, ast.Constant) else None
                if q == "os.environ" and key in _BENIGN_ENV:
                    continue
                yield Finding(rule="patch", line=node.lineno, message=f"item assignment `{snippet(t)}` on {q}{_patch_why(q)}")
        if not isinstance(node, ast.Call):
            continue
        name = src.builtin(node.func)
        if name in {"setattr", "delattr", "builtins.setattr", "builtins.delattr"} and node.args:
            target = node.args[0]
            q = src.qualname(target)
            if q:
                yield Finding(rule="patch", line=node.lineno, message=f"`{snippet(node)}` patches {q}{_patch_why(q)}")
        elif name in _PRECISION_SETTERS:
            arg = node.args[0] if node.args else None
            if name.endswith("matmul_precision") and isinstance(arg, ast.Constant) and arg.value == "highest":
                continue
            yield Finding(rule="patch", line=node.lineno,
                          message=f"`{snippet(node)}` changes global numerics (lowering precision is not allowed)")


def _patch_why(q: str) -> str:
    if q.startswith("builtins"):
        return " (modifies builtins)"
    if q.startswith("os.environ"):
        return " (sets an environment variable the harness or libraries read)"
    if q.startswith(("torch.backends", "torch._C._set")) or "tf32" in q or "reduced_precision" in q:
        return " (changes global numerics: lowering precision is not allowed)"
    return " (rebinds an attribute of an imported module)"


def _concurrency(src: _Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for m in modules:
            if m in _CONCURRENCY_MODULES or m.split(".")[0] in _CONCURRENCY_MODULES or _OS_PROCESS.match(m):
                yield Finding(rule="concurrency", line=node.lineno,
                              message=f"imports {m}: threads/processes/signals can run work outside the timed region")
                break
        if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
            q = src.qualname(node)
            if q and (_OS_PROCESS.match(q) or q == "torch.multiprocessing"):
                yield Finding(rule="concurrency", line=node.lineno, message=f"uses {q}: spawns work outside the timed region")


def _stream(src: _Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
            if (q := src.qualname(node)) in _STREAM_NAMES:
                yield Finding(rule="stream", line=node.lineno,
                              message=f"uses {q}: work on another stream or timed by own events escapes the harness timer")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if src.qualname(func) in _STREAM_NAMES:
                continue
            if name.endswith("Stream") or name in _STREAM_METHODS:
                yield Finding(rule="stream", line=node.lineno,
                              message=f"calls `{snippet(node)}`: stream juggling escapes the harness timer")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield from _cpp_streams(node.value, node.lineno)


def _cpp_streams(text: str, first_line: int) -> Iterator[Finding]:
    """Regex scan of string literals (inline CUDA C++) for side streams and non-current launches."""
    for m in _CPP_STREAM.finditer(text):
        line = first_line + text.count("\n", 0, m.start())
        what = m.group(1) or f"`{m.group(2)}` (a per-thread default stream)"
        yield Finding(rule="stream", line=line, message=f"CUDA source uses {what}: work off the current stream escapes the timer")
    for m in _LAUNCH.finditer(text):
        args = _split_top(m.group(1))
        if len(args) < 4 or _is_current_stream(args[3], text):
            continue
        line = first_line + text.count("\n", 0, m.start())
        yield Finding(rule="stream", line=line,
                      message=f"CUDA launch `<<<{', '.join(args)}>>>` uses stream `{args[3]}`, which is not 0 or "
                      "at::cuda::getCurrentCUDAStream()")


def _split_top(args: str) -> list[str]:
    # Angle brackets are not counted: `a >> 2` or `n > 0 ? a : b` would unbalance them.
    parts: list[str] = []
    depth, cur = 0, ""
    for ch in args:
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return parts + [cur.strip()]


def _is_current_stream(expr: str, text: str) -> bool:
    expr = " ".join(expr.split())
    if expr in {"0", "nullptr", "NULL"} or _CURRENT_STREAM.match(expr):
        return True
    if re.fullmatch(r"\w+", expr):  # a variable: accept it if this source defines it as the current stream
        for d in re.finditer(rf"\b{expr}\s*=\s*([^;]+);", text):
            if _CURRENT_STREAM.match(" ".join(d.group(1).split())):
                return True
    return False


def _fallback(src: _Source) -> Iterator[Finding]:
    flagged: set[int] = set()
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Try):
            body = [n for stmt in node.body for n in ast.walk(stmt)]
            launch = next((n for n in body if src.launches_in(n)), None)
            build = next((n for n in body if src.is_build(n)), None)
            guarded = f"kernel launch `{snippet(launch)}`" if launch else f"extension build `{snippet(build)}`" if build else None
            for h in node.handlers if guarded else []:
                if not _reraises(h):
                    flagged.add(id(h))
                    yield Finding(rule="fallback", line=h.lineno,
                                  message=f"except handler around {guarded} (line {node.lineno}) does not re-raise: "
                                  f"{_handler_does(src, h)}")
        elif isinstance(node, ast.With):
            for item in node.items:
                ctx = item.context_expr
                if isinstance(ctx, ast.Call) and src.qualname(ctx.func) == "contextlib.suppress":
                    if any(src.launches_in(n) for stmt in node.body for n in ast.walk(stmt)):
                        yield Finding(rule="fallback", line=node.lineno,
                                      message=f"`{snippet(ctx)}` swallows kernel-launch errors")
    for cls in (n for n in ast.walk(src.tree) if isinstance(n, ast.ClassDef)):
        for method in _forward_methods(cls):
            for node in own_nodes(method):
                if not isinstance(node, ast.Try):
                    continue
                for h in node.handlers:
                    if id(h) in flagged or _reraises(h):
                        continue
                    nodes = [n for stmt in h.body for n in ast.walk(stmt)]
                    torchy = any(isinstance(n, ast.Call) and (src.qualname(n.func) or "").startswith("torch") for n in nodes)
                    returns = any(isinstance(n, ast.Return) and n.value is not None for n in nodes)
                    if torchy or returns:
                        yield Finding(rule="fallback", line=h.lineno,
                                      message=f"except handler in {cls.name}.{method.name} does not re-raise: "
                                      f"{_handler_does(src, h)}")


def _reraises(handler: ast.ExceptHandler) -> bool:
    return bool(handler.body) and isinstance(handler.body[-1], ast.Raise)


def _handler_does(src: _Source, handler: ast.ExceptHandler) -> str:
    for n in (n for stmt in handler.body for n in ast.walk(stmt)):
        if isinstance(n, ast.Call) and (q := src.qualname(n.func) or "").startswith("torch"):
            return f"falls back to PyTorch ({q})"
    for n in (n for stmt in handler.body for n in ast.walk(stmt)):
        if isinstance(n, ast.Return) and n.value is not None:
            return f"returns `{snippet(n.value)}` instead of the kernel's result"
    return "swallows the error and carries on"


def _forward_methods(cls: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """``forward``/``__call__`` and the methods they reach through ``self.<name>(...)``."""
    methods = {n.name: n for n in cls.body if isinstance(n, _FUNCS)}
    todo = [m for m in ("forward", "__call__") if m in methods]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for n in own_nodes(methods[name]):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and self_key(n.func) in {
                    f"self.{m}" for m in methods}:
                todo.append(n.func.attr)
    return [methods[n] for n in sorted(seen)]


def _global_cache(src: _Source) -> Iterator[Finding]:
    states = launch_states(src)  # the compiled kernel a launcher relaunches: egg.evaluate.launch_state
    for f in src.functions:
        for dec in f.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            q = src.qualname(target) or (target.id if isinstance(target, ast.Name) else None)
            if q in _CACHE_DECORATORS or q in {"lru_cache", "cache", "cached_property"}:
                yield Finding(rule="global-cache", line=dec.lineno,
                              message=f"@{snippet(dec)} on {f.name}() caches results across calls")
        declared = {n for g in own_nodes(f) if isinstance(g, ast.Global) for n in g.names}
        local = {n.id for n in own_nodes(f) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        local |= {a.arg for a in ast.walk(f.args) if isinstance(a, ast.arg)}
        module_level = (src.module_names | declared) - (local - declared)
        for node in own_nodes(f):
            value = getattr(node, "value", None)
            for t in assign_targets(node):
                if isinstance(t, ast.Name) and t.id in declared and not src.is_build(value) and t.id not in states:
                    yield Finding(rule="global-cache", line=node.lineno,
                                  message=f"{f.name}() rebinds module-level `{t.id}` through `global` (state kept across calls)")
                elif isinstance(t, (ast.Subscript, ast.Attribute)) and isinstance(r := root_of(t), ast.Name) \
                        and r.id in module_level:
                    yield Finding(rule="global-cache", line=node.lineno,
                                  message=f"{f.name}() stores `{snippet(t)}` into module-level `{r.id}` (a cache across calls)")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
                r = root_of(node.func.value)
                if isinstance(r, ast.Name) and r.id in module_level:
                    yield Finding(rule="global-cache", line=node.lineno,
                                  message=f"{f.name}() mutates module-level `{r.id}` with `{snippet(node)}` (a cache across calls)")
    for cls in (n for n in ast.walk(src.tree) if isinstance(n, ast.ClassDef)):
        for method in _forward_methods(cls):
            yield from _self_state(src, cls, method)


def _self_state(src: _Source, cls: ast.ClassDef, method: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[Finding]:
    where = f"{cls.name}.{method.name}"
    for node in own_nodes(method):
        value = getattr(node, "value", None)
        for t in assign_targets(node):
            r = root_of(t)
            if isinstance(t, (ast.Attribute, ast.Subscript)) and isinstance(r, ast.Name) and r.id == "self" \
                    and not src.is_build(value):
                yield Finding(rule="global-cache", line=node.lineno,
                              message=f"{where} stores `{snippet(t)}`: state kept across forward calls (result caching)")
        if isinstance(node, ast.Call):
            func = node.func
            mutator = isinstance(func, ast.Attribute) and func.attr in _MUTATORS
            setter = isinstance(func, ast.Name) and func.id == "setattr"
            base = func.value if mutator else node.args[0] if setter and node.args else None
            if base is not None and isinstance(r := root_of(base), ast.Name) and r.id == "self":
                yield Finding(rule="global-cache", line=node.lineno,
                              message=f"{where} calls `{snippet(node)}`: state kept across forward calls (result caching)")


def _introspection(src: _Source) -> Iterator[Finding]:
    why = "lets a candidate find the reference's outputs or patch the harness"
    for node in ast.walk(src.tree):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        for m in modules:
            if m.split(".")[0] in _INTROSPECTION_MODULES:
                yield Finding(rule="introspection", line=node.lineno, message=f"imports {m}: {why}")
        if isinstance(node, ast.Attribute) and node.attr in _FRAME_ATTRS:
            yield Finding(rule="introspection", line=node.lineno, message=f"accesses `.{node.attr}`: {why}")
        elif isinstance(node, (ast.Attribute, ast.Name)) and (q := src.qualname(node)) in _INTROSPECTION_NAMES:
            yield Finding(rule="introspection", line=node.lineno, message=f"uses {q}: {why}")
        elif isinstance(node, ast.Call):
            name = src.builtin(node.func)
            if isinstance(node.func, ast.Name) and name in _INTROSPECTION_BUILTINS:
                yield Finding(rule="introspection", line=node.lineno, message=f"calls {name}(): {why}")
            elif isinstance(node.func, ast.Attribute) and node.func.attr in _FILE_METHODS:
                yield Finding(rule="introspection", line=node.lineno, message=f"file I/O `{snippet(node)}`: {why}")


_COMPILERS = ("torch.compile", "torch._dynamo", "torch._inductor", "torch.jit", "torch.export")


def _library_compiler(src: _Source) -> Iterator[Finding]:
    why = "its generated kernels would pass for the candidate's own; write the kernel instead"
    for node in ast.walk(src.tree):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [f"{node.module}.{a.name}" for a in node.names]
        for m in modules:
            if m.startswith(_COMPILERS):
                yield Finding(rule="library-compiler", line=node.lineno, message=f"imports {m}: {why}")
        if isinstance(node, (ast.Attribute, ast.Name)):
            q = src.qualname(node)
            if q and q.startswith(_COMPILERS) and not isinstance(getattr(node, "ctx", None), ast.Store):
                yield Finding(rule="library-compiler", line=node.lineno, message=f"uses {q}: {why}")

