"""CUDA candidates: compile-check inline CUDA with nvcc, and intercept ``load_inline``/``load``
(in the runner process, around the candidate's import).

The compile check itself lives in :mod:`egg.evaluate.nvcc_check`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import structlog

from egg.evaluate.launches import RUNNER_LOG
from egg.evaluate.nvcc_check import CompileCheck, CudaUnavailable, nvcc_compile_check
from egg.evaluate.poison import poison_outputs

log = structlog.get_logger(__name__)

_KEEP_FLAGS = ("-D", "-U", "-I", "-O", "--use_fast_math", "-use_fast_math", "--expt-", "-std=", "--ftz", "-ftz",
               "--prec-", "-prec-", "--fmad", "-fmad", "-lineinfo", "--maxrregcount", "-maxrregcount", "-Xptxas")
_TWO_TOKEN_FLAGS = {"-D", "-U", "-I", "-Xptxas", "--maxrregcount", "-maxrregcount"}


class ExtensionCalls(list[dict[str, Any]]):
    """The records of every load_inline/load call, one dict each, plus their call counts."""

    def launch_counts(self) -> dict[str, int]:
        """``"<extension>.<function>" -> calls`` over every built extension."""
        counts: dict[str, int] = {}
        for record in self:
            for fn, n in record.get("calls", {}).items():
                key = f"{record['name']}.{fn}"
                counts[key] = counts.get(key, 0) + n
        return counts


class _CountingModule:
    """Delegates to a built extension; each call of one of its functions is counted.

    The wrapper adds a Python call per launch: it can only make the candidate look slower, never
    faster, and the counts are what prove a CUDA candidate actually ran its own kernels. During the
    kernel-ablation call (:mod:`egg.evaluate.launches`) what a call writes into its arguments and
    the tensors it returns are replaced by poison."""

    def __init__(self, module: Any, counts: dict[str, int]) -> None:
        self._egg_module = module
        self._egg_counts = counts

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_egg_"):  # not set yet (copy/pickle build instances without __init__)
            raise AttributeError(name)
        attr = getattr(self._egg_module, name)
        if name.startswith("__") or not callable(attr):
            return attr
        counts = self._egg_counts

        @functools.wraps(attr)
        def counted(*args: Any, **kwargs: Any) -> Any:
            counts[name] = counts.get(name, 0) + 1
            if RUNNER_LOG.ablate:  # the kernel-ablation call: its writes and its results become poison
                out = RUNNER_LOG.run_ablated(lambda: attr(*args, **kwargs), None, [], args, kwargs)
                poison_outputs(out)
                return out
            return attr(*args, **kwargs)

        self.__dict__[name] = counted
        return counted

    def __dir__(self) -> list[str]:
        return dir(self._egg_module)

    def launch_counts(self) -> dict[str, int]:
        return dict(self._egg_counts)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _passthrough(flags: Any) -> list[str]:
    """The user's nvcc flags that change what compiles (macros, includes, math modes, registers)."""
    out: list[str] = []
    items = _as_list(flags)
    i = 0
    while i < len(items):
        flag = items[i]
        if flag.startswith(_KEEP_FLAGS):
            out.append(flag)
            if flag in _TWO_TOKEN_FLAGS and i + 1 < len(items):
                out.append(items[i + 1])
                i += 1
        i += 1
    return out


def _unique_name(name: str, payload: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"{re.sub(r'[^0-9A-Za-z_]', '_', name) or 'ext'}_{digest}"


# Called with ("start", {}) before a build or compile check and ("done", {"seconds": s}) after it.
# The worker forwards these to the parent, which gives builds their own time limit: a candidate's
# timeout bounds the candidate's run, not nvcc parsing the torch headers.
build_listeners: list[Callable[[str, dict[str, Any]], None]] = []


def _notify(event: str, **data: Any) -> None:
    for listener in list(build_listeners):
        listener(event, data)


@contextlib.contextmanager
def intercept_load_inline(build_root: Path, on_gpu: bool) -> Iterator[ExtensionCalls]:
    """While active, every ``torch.utils.cpp_extension.load_inline``/``load`` call is recorded, gets a
    unique name and a build directory under ``build_root``; on a GPU it builds for real and calls
    into the module are counted; without one, CUDA sources are compile-checked and
    :class:`CudaUnavailable` is raised. Import the candidate inside the block (its ``from ...
    import load_inline`` must see the replacement). The originals are restored on exit."""
    import torch.utils.cpp_extension as cpp

    build_root = Path(build_root)
    build_root.mkdir(parents=True, exist_ok=True)
    records = ExtensionCalls()
    original_inline, original_load = cpp.load_inline, cpp.load
    sig_inline, sig_load = inspect.signature(original_inline), inspect.signature(original_load)

    def build(original: Callable[..., Any], kind: str, args: dict[str, Any], record: dict[str, Any]) -> Any:
        payload = {k: v for k, v in args.items() if k not in {"name", "build_directory", "verbose"}}
        if kind == "load":
            payload["contents"] = [Path(s).read_text(errors="replace") for s in record["sources"] if Path(s).is_file()]
        unique = _unique_name(str(args["name"]), payload)
        build_dir = build_root / unique
        build_dir.mkdir(parents=True, exist_ok=True)
        record.update(unique_name=unique, build_directory=str(build_dir), calls={}, check=None)
        records.append(record)
        cuda_files = [s for s in record.get("sources", []) if s.endswith(".cu")]
        wants_cuda = bool(record.get("cuda_sources") or cuda_files or args.get("with_cuda"))
        started = time.monotonic()
        _notify("start")
        try:
            if wants_cuda and not on_gpu:
                check = _check_call(kind, args, record, cuda_files, build_dir)
                record["check"] = check.model_dump()
                raise CudaUnavailable(check, str(args["name"]))
            module = original(**{**args, "name": unique, "build_directory": str(build_dir)})
        finally:
            _notify("done", seconds=time.monotonic() - started)
        if module is None:  # is_python_module=False: ops live in torch.ops and cannot be wrapped
            return None
        return _CountingModule(module, record["calls"])

    def load_inline(*a: Any, **kw: Any) -> Any:
        args = dict(sig_inline.bind(*a, **kw).arguments)
        cpp_sources, cuda_sources = _as_list(args.get("cpp_sources")), _as_list(args.get("cuda_sources"))
        record = {"function": "load_inline", "name": str(args["name"]), "cpp_sources": cpp_sources,
                  "cuda_sources": cuda_sources, "functions": args.get("functions"),
                  "extra_cuda_cflags": _as_list(args.get("extra_cuda_cflags"))}
        # load_inline inserts headers into the lists it is given: it gets copies, the record the originals.
        args.update(cpp_sources=list(cpp_sources), cuda_sources=list(cuda_sources) or None)
        return build(original_inline, "load_inline", args, record)

    def load(*a: Any, **kw: Any) -> Any:
        args = dict(sig_load.bind(*a, **kw).arguments)
        record = {"function": "load", "name": str(args["name"]),
                  "sources": [str(Path(s).resolve()) for s in _as_list(args.get("sources"))],
                  "extra_cuda_cflags": _as_list(args.get("extra_cuda_cflags"))}
        return build(original_load, "load", args, record)

    cpp.load_inline, cpp.load = load_inline, load
    try:
        yield records
    finally:
        cpp.load_inline, cpp.load = original_inline, original_load


def _check_call(kind: str, args: dict[str, Any], record: dict[str, Any], cuda_files: list[str],
                build_dir: Path) -> CompileCheck:
    includes = _as_list(args.get("extra_include_paths"))
    flags = _passthrough(args.get("extra_cuda_cflags"))
    if kind == "load_inline":
        if not record["cuda_sources"]:
            return CompileCheck(ok=True, notes=["with_cuda=True but no cuda_sources: nothing to compile-check"])
        return nvcc_compile_check(record["cuda_sources"], build_dir / "nvcc_check",
                                  implicit_headers=not args.get("no_implicit_headers", False),
                                  include_dirs=includes, extra_flags=flags)
    checks = [nvcc_compile_check(Path(f).read_text(errors="replace"), build_dir / f"nvcc_check_{i}",
                                 implicit_headers=False, include_dirs=[str(Path(f).parent), *includes],
                                 extra_flags=flags, source_label=Path(f).name)
              for i, f in enumerate(cuda_files)]
    if not checks:
        return CompileCheck(ok=True, notes=["with_cuda=True but no .cu sources: nothing to compile-check"])
    return CompileCheck(ok=all(c.ok for c in checks), errors=[e for c in checks for e in c.errors],
                        registers={k: v for c in checks for k, v in c.registers.items()},
                        spills={k: v for c in checks for k, v in c.spills.items()},
                        command=" && ".join(c.command for c in checks), seconds=sum(c.seconds for c in checks),
                        notes=list(dict.fromkeys(n for c in checks for n in c.notes)))
