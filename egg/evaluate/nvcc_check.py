"""Compile-checking CUDA sources with nvcc where no GPU exists (or before a GPU build).

A CUDA candidate builds its kernels at import time with ``torch.utils.cpp_extension.load_inline``.
:func:`intercept_load_inline` sits in front of that call: every build gets its own name and build
directory (no stale cache from another candidate with the same ``name``), the arguments are
recorded, and on a GPU the built module is wrapped so that calls into it are counted. Without a
GPU nothing can run, but :func:`nvcc_compile_check` still compiles the CUDA sources to a cubin for
the target architecture, so compile errors, register counts and spills are reported honestly.

The compile check uses torch's real headers (``include_paths()``, Python's include dir) with the
flags torch's own build passes to nvcc, including ``-std=c++20``: torch >= 2.10 headers use C++20
(``-std=c++17`` only warns today, but torch builds extensions with C++20, so that is what must
compile). A CPU build of torch ships the ATen/c10 CUDA headers but two things are missing on a
CPU-only machine: the CUDA math libraries' headers (cuBLAS, cuSPARSE, cuSOLVER; a minimal toolkit
lacks them) and ``c10/cuda/impl/cuda_cmake_macros.h`` (generated only by CUDA builds of torch).
``ATen/cuda/CUDAContext.h``, which nearly every LLM-written kernel includes for
``getCurrentCUDAStream()``, needs all of them. We give nvcc declaration-only stubs for exactly
those headers, searched *after* every real include dir (``-idirafter``), so a real header always
wins and the stubs only declare the handle/status types torch's headers name. Kernel code is
compiled for real; only code that calls cuBLAS/cuSPARSE/cuSOLVER functions themselves could fail
here and pass on a full toolkit, and the check's ``notes`` say when stubs were used. Only the
``cuda_sources`` are compiled: ``cpp_sources`` (declarations and bindings) need the host build.
"""


from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path

import structlog
from pydantic import BaseModel, Field

log = structlog.get_logger(__name__)

SOURCE_LABEL = "cuda_sources"
# load_inline prepends these to cuda_sources unless no_implicit_headers=True.
_IMPLICIT_HEADERS = ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
# torch.utils.cpp_extension.COMMON_NVCC_FLAGS: they change what compiles (no implicit half ops).
_TORCH_NVCC_FLAGS = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                     "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                     "--expt-relaxed-constexpr"]
_STUBS = {
    "cublas_v2.h": "typedef struct cublasContext* cublasHandle_t;\n"
                   "typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;\n",
    "cublasLt.h": "#include <cublas_v2.h>\ntypedef struct cublasLtContext* cublasLtHandle_t;\n",
    "cusparse.h": "typedef struct cusparseContext* cusparseHandle_t;\n"
                  "typedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;\n"
                  "const char* cusparseGetErrorString(cusparseStatus_t status);\n",
    "cusolver_common.h": "typedef enum { CUSOLVER_STATUS_SUCCESS = 0, CUSOLVER_STATUS_INVALID_VALUE = 3 }"
                         " cusolverStatus_t;\n",
    "cusolverDn.h": "#include <cusolver_common.h>\ntypedef struct cusolverDnContext* cusolverDnHandle_t;\n",
    "c10/cuda/impl/cuda_cmake_macros.h": "",
}
_EDG_ERROR = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?:catastrophic error|error)(?: #[\w-]+)?: (?P<msg>.*)$")
_GCC_ERROR = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$")
_TOOL_ERROR = re.compile(r"^(?P<tool>ptxas|nvcc|nvlink|cicc)\s+(?:error|fatal)\s*:\s*(?P<msg>.*)$")


class CompileCheck(BaseModel):
    """What nvcc said about a candidate's CUDA sources (device code compiled to a cubin)."""

    ok: bool
    errors: list[str] = Field(default_factory=list, description="one line each, with the source line")
    registers: dict[str, int] = Field(default_factory=dict, description="kernel -> registers (ptxas -v)")
    spills: dict[str, int] = Field(default_factory=dict, description="function -> spill store+load bytes")
    command: str = ""
    seconds: float = 0.0
    notes: list[str] = Field(default_factory=list)


class CudaUnavailable(RuntimeError):
    """A CUDA extension was compile-checked but cannot be built and run: there is no GPU."""

    def __init__(self, check: CompileCheck, name: str = "extension", arch: str = "sm_90a") -> None:
        self.check = check
        self.name = name
        self.arch = arch
        super().__init__(self.reason())

    def reason(self) -> str:
        if self.check.ok:
            regs = ", ".join(f"{k}: {v} registers" for k, v in self.check.registers.items())
            return (f"CUDA extension '{self.name}' compiled with nvcc ({self.arch}) but cannot run without a GPU"
                    + (f" ({regs})" if regs else ""))
        first = self.check.errors[0] if self.check.errors else "unknown error"
        more = f" (+{len(self.check.errors) - 1} more)" if len(self.check.errors) > 1 else ""
        return f"CUDA extension '{self.name}' does not compile with nvcc ({self.arch}): {first}{more}"


def find_nvcc() -> str | None:
    """nvcc the way torch finds the toolkit: $CUDA_HOME/$CUDA_PATH if set, else PATH, else
    /usr/local/cuda. An explicit $CUDA_HOME is the only place looked at, as in torch."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        candidate = Path(home) / "bin" / "nvcc"
        return str(candidate) if candidate.is_file() else None
    found = shutil.which("nvcc")
    if found:
        return found
    candidate = Path("/usr/local/cuda/bin/nvcc")
    return str(candidate) if candidate.is_file() else None


def nvcc_compile_check(
    cuda_sources: str | list[str],
    workdir: Path,
    arch: str = "sm_90a",
    timeout_s: float = 120,
    *,
    implicit_headers: bool = True,
    include_dirs: Sequence[str | Path] = (),
    extra_flags: Sequence[str] = (),
    source_label: str = SOURCE_LABEL,
) -> CompileCheck:
    """Compile CUDA sources (as load_inline would) to a cubin for ``arch``; never raises for nvcc."""
    nvcc = find_nvcc()
    if nvcc is None:
        missing = "nvcc not found ($CUDA_HOME, PATH, /usr/local/cuda): cannot compile-check CUDA sources"
        return CompileCheck(ok=False, errors=[missing])
    from torch.utils.cpp_extension import include_paths

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    stub_dir = workdir / "egg_stub_include"
    for rel, text in _STUBS.items():
        (stub_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (stub_dir / rel).write_text(f"#pragma once\n// egg: declaration-only stub (header absent here)\n{text}")
    sources = [cuda_sources] if isinstance(cuda_sources, str) else list(cuda_sources)
    # `#line` makes nvcc report positions in the candidate's own source, not in our wrapper file.
    text = "\n".join((_IMPLICIT_HEADERS if implicit_headers else []) + [f'#line 1 "{source_label}"'] + sources)
    src = workdir / "egg_check.cu"
    src.write_text(text + "\n")
    system = [*include_paths(), sysconfig.get_path("include", scheme="posix_prefix")]
    std = [] if any(f.startswith("-std=") for f in extra_flags) else ["-std=c++20"]
    cmd = [nvcc, f"-arch={arch}", "-cubin", "-Xptxas", "-v", *std, *_TORCH_NVCC_FLAGS, *extra_flags,
           *(f"-I{d}" for d in include_dirs), *(a for d in system for a in ("-isystem", d)),
           "-Xcompiler", f"-idirafter,{stub_dir}", "-o", str(workdir / "egg_check.cubin"), str(src)]
    started = time.perf_counter()
    # nvcc runs cicc and ptxas as children: its own process group lets a timeout end all of them.
    proc = subprocess.Popen(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return CompileCheck(ok=False, errors=[f"nvcc timed out after {timeout_s:.0f}s"], command=shlex.join(cmd),
                            seconds=round(time.perf_counter() - started, 3))
    seconds = time.perf_counter() - started
    errors = _parse_errors(output, source_label, system)
    if proc.returncode != 0 and not errors:
        tail = [ln.strip() for ln in output.splitlines() if ln.strip()]
        errors = [f"nvcc exited with status {proc.returncode}: {tail[-1] if tail else 'no output'}"]
    registers, spills = _parse_ptxas(output)
    check = CompileCheck(ok=proc.returncode == 0 and not errors, errors=errors, registers=registers, spills=spills,
                         command=shlex.join(cmd), seconds=round(seconds, 3), notes=_stub_notes(nvcc, system))
    log.info("nvcc_compile_check", ok=check.ok, errors=len(errors), kernels=len(registers), seconds=check.seconds)
    return check


def _parse_errors(output: str, label: str, system: list[str]) -> list[str]:
    errors: list[str] = []
    for raw in output.splitlines():
        line = raw.rstrip()
        m = _EDG_ERROR.match(line) or _GCC_ERROR.match(line)
        if m:
            errors.append(f"{_where(m['file'], label, system)} line {m['line']}: error: {m['msg'].strip()}")
        elif m := _TOOL_ERROR.match(line):
            errors.append(f"{m['tool']}: error: {_demangle_text(m['msg'].strip())}")
    return list(dict.fromkeys(errors))


def _where(file: str, label: str, system: list[str]) -> str:
    if file == label:
        return label
    for root in system:
        if file.startswith(root.rstrip("/") + "/"):
            return file[len(root.rstrip("/")) + 1:]
    return Path(file).name


def _parse_ptxas(output: str) -> tuple[dict[str, int], dict[str, int]]:
    """``ptxas -v`` lines -> registers per entry kernel and spill bytes per function."""
    regs: dict[str, int] = {}
    spills: dict[str, int] = {}
    current: str | None = None
    for line in output.splitlines():
        if m := re.search(r"Compiling entry function '([^']+)'", line):
            current = m.group(1)
        elif m := re.search(r"Function properties for (\S+)", line):
            current = m.group(1)
        elif current and (m := re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)):
            spills[current] = int(m.group(1)) + int(m.group(2))
        elif current and (m := re.search(r"Used (\d+) registers", line)):
            regs[current] = int(m.group(1))
    names = _demangle([*regs, *spills])
    return _rename(regs, names), _rename(spills, names)


def _rename(values: dict[str, int], names: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for mangled, v in values.items():
        full = names.get(mangled, mangled)
        short = _short_name(full)
        out[full if short in out else short] = v
    return out


def _short_name(signature: str) -> str:
    """``void k<float>(float const*, int)`` -> ``k<float>``."""
    text = signature.strip()
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += (text[i] == ")") - (text[i] == "(")
            if depth == 0:
                text = text[:i]
                break
    depth, cut = 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "<") - (ch == ">")
        if ch == " " and depth == 0:
            cut = i + 1
    return text[cut:] or signature


def _demangle(names: list[str]) -> dict[str, str]:
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not tool or not names:
        return {}
    try:
        proc = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out = proc.stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {}


def _demangle_text(text: str) -> str:
    mangled = re.findall(r"_Z\w+", text)
    for old, new in _demangle(mangled).items():
        text = text.replace(old, new)
    return text


@functools.lru_cache(maxsize=4)
def _toolkit_includes(nvcc: str) -> tuple[str, ...]:
    """The include dirs nvcc itself adds (from ``nvcc --dryrun``)."""
    try:
        proc = subprocess.run([nvcc, "--dryrun", "-cubin", "-x", "cu", os.devnull], capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(re.findall(r'-I"?([^"\s]+)"?', proc.stdout + proc.stderr))


def _stub_notes(nvcc: str, system: list[str]) -> list[str]:
    roots = [*_toolkit_includes(nvcc), *system]
    missing = [rel for rel in _STUBS if not any((Path(r) / rel).is_file() for r in roots)]
    if not missing:
        return []
    return ["declaration-only stubs stood in for headers absent here: " + ", ".join(missing)
            + " (kernel code is compiled for real; calls into those libraries are not checked)"]


# -- intercepting load_inline / load ---------------------------------------------------------------
