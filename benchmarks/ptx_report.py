"""What a candidate's Triton kernels compile to on Hopper, without a GPU: a pre-flight check.

The GPU is scarce (30 device minutes a session); some slow paths show in the compiled code before
any run. This script records every Triton launch of a candidate's forward call (the interpreter's
launch hook, which records and skips the kernel: only signatures matter, so the problem's real
shapes cost allocations, not interpretation), compiles each kernel for sm_90a the way Triton's JIT
would specialise it (16-divisible pointers and ints, ints equal to 1 as constants), and reports
per kernel: tensor-core instructions (``wgmma``), global-to-shared copies by width, vector global
loads, registers and spills from ``ptxas -v``, and the SASS instructions of each loop body (nvdisasm
of the cubin Triton built: what a GPU issues a step).

What it found first (2026-12-04, CPU, Triton 3.6): a TF32 ``tl.dot`` whose B tile is N-major in
global memory fills its K-major shared tile with 4-byte ``cp.async`` copies (16-byte ones when B is
K-major), and a 3xTF32 dot re-lays B out through registers with scalar shared-memory stores (only
16-byte ones when B is K-major): the 2x the H200 measured on fp32 GEMMs (BENCHMARKS.md, 2026-12-04
third session). The expert's implicit-GEMM convolution gathered B N-major until 86e98f4.

    python benchmarks/ptx_report.py PROBLEM.py [--variant V] [--shape-set S] [--config JSON] [--source CANDIDATE.py]
        [--out JSON] [--dump DIR]

Figures here are static properties of the code, not performance: the judge measures that.
"""

from __future__ import annotations

import os

import sys

# before triton is imported: the recording process runs launches through the interpreter, the
# compiling one needs real JIT functions (Triton's own helpers, tl.cdiv among them, are JIT
# functions decorated at import: one process cannot have both)
os.environ["TRITON_INTERPRET"] = "1" if "--record" in sys.argv else "0"

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.runtime import interpreter  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
_TYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
          torch.int8: "i8", torch.uint8: "u8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
          torch.bool: "i1"}


def _spec(v: Any) -> Any:
    """What specialisation sees of a launch argument (JSON)."""
    if isinstance(v, torch.Tensor):
        return {"tensor": _TYPES[v.dtype], "aligned": v.data_ptr() % 16 == 0}
    return v


def record_launches(candidate: Path, problem: Path, shape_set: str) -> list[tuple[Any, tuple, dict]]:
    """(the kernel's Python function, args, kwargs) of every Triton launch in one forward call."""
    from egg.profile.target import build_model, draw_inputs, load

    launches: list[tuple[Any, tuple, dict]] = []

    def record(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> None:
        launches.append((self.fn, args, kwargs))

    spec = importlib.util.spec_from_file_location("egg_ptx_candidate", candidate)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    loaded = load(str(problem), shape_set)
    real = interpreter.InterpretedFunction.run
    interpreter.InterpretedFunction.run = record  # type: ignore[method-assign]
    try:
        with torch.no_grad():
            inputs = draw_inputs(loaded, 0, torch.device("cpu"))
            build_model(module.ModelNew, loaded, 0, torch.device("cpu"))(*inputs)
    finally:
        interpreter.InterpretedFunction.run = real  # type: ignore[method-assign]
    return launches


def compiled_module(candidate: Path) -> Any:
    """The candidate imported with real JIT functions (this process does not interpret)."""
    spec = importlib.util.spec_from_file_location("egg_ptx_compiled", candidate)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Switches a launcher sets from the tensors' device: recorded on the CPU, they hold the CPU's value;
# a GPU launch passes these (the matmul template's DOT_FP32 picks exact fp32 dots for the interpreter,
# whose bf16 products are wrong: compiled as recorded, a bf16 GEMM became TF32 mma.sync with operand
# conversions, 2026-12-05; the reduction template's PTX picks inline PTX over the interpreter's
# tl.exp2).
GPU_LAUNCH = {"DOT_FP32": False, "PTX": True}


def compile_launch(jit: Any, args: tuple, kwargs: dict) -> Any:
    """The launch of ``jit`` (a real JIT function) compiled for sm_90a as Triton's JIT would specialise it."""
    names = jit.arg_names
    values = dict(zip(names, args)) | {k: v for k, v in kwargs.items() if k in names}
    values |= {k: v for k, v in GPU_LAUNCH.items() if k in names}
    options = {k: v for k, v in kwargs.items() if k not in names}
    constexpr = {p.name for p in jit.params if p.is_constexpr}
    signature: dict[str, str] = {}
    constants: dict[str, Any] = {}
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    for i, name in enumerate(names):
        v = values.get(name)
        if name in constexpr or v is None or (isinstance(v, int) and not isinstance(v, bool) and v == 1):
            signature[name], constants[name] = "constexpr", v
        elif isinstance(v, dict):  # a tensor, as _spec recorded it
            signature[name] = f"*{v['tensor']}"
            if v["aligned"]:
                attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(v, bool):
            signature[name] = "i1"
        elif isinstance(v, int):
            signature[name] = "i32" if -2**31 <= v < 2**31 else "i64"
            if v % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(v, float):
            signature[name] = "fp32"
        else:
            raise TypeError(f"{jit.__name__}: argument {name} of type {type(v).__name__}")
    return triton.compile(ASTSource(jit, signature, constants, attrs), target=TARGET, options=options)


def loop_instructions(ptx: str) -> list[int]:
    """Instructions in each innermost loop body (LLVM marks their headers "Inner Loop Header"), from
    the header's label to the branch back to it: a K loop's per-step cost, one thread's view."""
    lines = ptx.splitlines()
    counts = []
    for i, line in enumerate(lines):
        if "Inner Loop Header" not in line:
            continue
        label = line.split(":", 1)[0].strip()
        n = 0
        for body in lines[i + 1:]:
            text = body.strip()
            if not text or text.startswith(("//", "$", "{", "}", ".reg", ".loc")):
                continue
            n += 1
            if "bra" in text and text.rstrip(";").endswith(label):
                break
        counts.append(n)
    return counts


def _nvdisasm() -> str | None:
    """Triton's own nvdisasm (the one its compiler ships with), else one on PATH."""
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
    return str(bundled) if bundled.exists() else shutil.which("nvdisasm")


def sass_loop_instructions(cubin: bytes) -> list[int] | None:
    """SASS instructions in each loop body (a label and a later branch back to it), from the cubin
    Triton built: what the GPU issues a step, after ptxas (which fuses, for instance, PTX's byte
    extracts and packs into PRMTs). None where no nvdisasm is found."""
    tool = _nvdisasm()
    if tool is None:
        return None
    with tempfile.NamedTemporaryFile("wb", suffix=".cubin", delete=False) as f:
        f.write(cubin)
    try:
        lines = subprocess.run([tool, "-c", f.name], capture_output=True, text=True, timeout=300).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        os.unlink(f.name)
    labels = {line.split(":", 1)[0]: i for i, line in enumerate(lines) if line.startswith(".L_x_")}
    counts = []
    for i, line in enumerate(lines):
        back = re.search(r"BRA `\((\.L_x_\d+)\)", line)
        if back and labels.get(back.group(1), i) < i:
            body = lines[labels[back.group(1)]:i + 1]
            counts.append(sum(1 for b in body if re.search(r"\*/\s+(@!?U?P\w+\s+)?[A-Z][A-Z0-9_.]*", b)))
    return [c for c in counts if c > 1]  # a branch to itself is the kernel's end, not a loop


def describe(kernel: Any) -> dict[str, Any]:
    ptx: str = kernel.asm["ptx"]
    copies = re.findall(r"cp\.async\.c[ag]\.shared\.global\S*\s+\[[^\]]+\],\s*\[[^\]]+\],\s*(0x\w+|\d+)", ptx)
    widths: dict[str, int] = {}
    for c in copies:
        size = str(int(c, 0))
        widths[size] = widths.get(size, 0) + 1
    regs = spills = None
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    try:
        done = subprocess.run(["ptxas", "-arch=sm_90a", "-v", f.name, "-o", os.devnull], capture_output=True,
                              text=True, timeout=300)
        text = done.stdout + done.stderr
        regs = int(m.group(1)) if (m := re.search(r"Used (\d+) registers", text)) else None
        spills = int(m.group(1)) if (m := re.search(r"(\d+) bytes spill stores", text)) else None
    except (OSError, subprocess.TimeoutExpired):
        pass
    finally:
        os.unlink(f.name)
    stores: dict[str, int] = {}
    for vec in re.findall(r"st\.shared(\.v\d)?\.\w+", ptx):
        key = vec.lstrip(".") or "scalar"
        stores[key] = stores.get(key, 0) + 1
    loads: dict[str, int] = {}  # direct global loads by width: "8" one byte, "v4.32" sixteen bytes
    for vec, bits in re.findall(r"ld\.global[\w:.]*?(\.v\d)?\.[bsuf](\d+)\s", ptx):
        key = f"{vec.lstrip('.')}.{bits}" if vec else bits
        loads[key] = loads.get(key, 0) + 1
    mma_types = sorted(set(re.findall(r"mma(?:\.sync|_async)\S*?\.(bf16|f16|tf32|e4m3|e5m2|s8)", ptx)))
    return {"wgmma": ptx.count("wgmma.mma_async"), "mma_sync": ptx.count("mma.sync"), "mma_types": mma_types,
            "ld_global_bits": loads, "loop_instructions": loop_instructions(ptx),
            "ex2": len(re.findall(r"ex2\.approx", ptx)),  # exps on the special-function unit, per kernel body
            "ex2_ftz": len(re.findall(r"ex2\.approx\.ftz\.f32", ptx)),  # of which flush subnormals (one MUFU each)
            "cp_async_bytes": widths, "shared_stores": stores, "ld_global_v4": len(re.findall(r"ld\.global\S*\.v4", ptx)),
            "registers": regs, "spill_store_bytes": spills,
            # what the launch asks for: over the device's opt-in limit (227 KB on Hopper) it fails to launch
            "shared_bytes": int(getattr(kernel.metadata, "shared", 0) or 0),
            "sass_loop_instructions": sass_loop_instructions(kernel.asm["cubin"]) if "cubin" in kernel.asm else None}


def _render(problem: Path, shape_set: str, variant: str | None, config: dict[str, Any]) -> str:
    """The expert's GPU render of ``variant`` (default: its first offer), ``config`` set where it applies."""
    from agents.expert.design import analyse, render
    from agents.expert.templates import template_for

    program = analyse(problem, shape_set)
    chosen = [v for v in program.variants if variant in (None, v.id)]
    if not chosen:
        sys.exit(f"--variant: expected one of {[v.id for v in program.variants]}, got {variant!r}")
    overrides = {k.name: {p: v for p, v in config.items() if p in template_for(k).tuning_space(k)}
                 for k in chosen[0].program.kernels}
    return render(program, chosen[0], "cuda", overrides).source


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problem", type=Path)
    ap.add_argument("--variant", help="the expert's structural variant (default: its first offer)")
    ap.add_argument("--shape-set", default="default")
    ap.add_argument("--source", type=Path, help="a candidate file instead of the expert's render")
    ap.add_argument("--config", type=json.loads, default=None,
                    help='the expert\'s render with these values set on every kernel whose tuning space has them '
                         '(JSON: \'{"SPLIT_K": 4}\')')
    ap.add_argument("--out", type=Path)
    ap.add_argument("--dump", type=Path, help="write each kernel's TTGIR, PTX and cubin into this folder")
    ap.add_argument("--record", type=Path, help=argparse.SUPPRESS)  # internal: the recording process's output
    args = ap.parse_args(argv)
    if args.record:  # in the interpreter: write the launches' specs and stop
        specs = [{"kernel": fn.__name__, "args": [_spec(a) for a in a_], "kwargs": {k: _spec(v) for k, v in kw.items()}}
                 for fn, a_, kw in record_launches(args.source, args.problem, args.shape_set)]
        args.record.write_text(json.dumps(specs))
        return 0
    with tempfile.TemporaryDirectory(prefix="egg-ptx-") as tmp:
        candidate = args.source
        if candidate is None:
            candidate = Path(tmp) / "candidate.py"
            candidate.write_text(_render(args.problem, args.shape_set, args.variant, args.config or {}))
        recorded = Path(tmp) / "launches.json"
        subprocess.run([sys.executable, __file__, str(args.problem), "--shape-set", args.shape_set, "--source",
                        str(candidate), "--record", str(recorded)], check=True)
        real = compiled_module(candidate)
        rows = []
        for i, r in enumerate(json.loads(recorded.read_text())):
            kernel = compile_launch(getattr(real, r["kernel"]), tuple(r["args"]), r["kwargs"])
            if args.dump:  # the layouts Triton chose (TTGIR), the instructions (PTX) and the cubin (nvdisasm -c)
                args.dump.mkdir(parents=True, exist_ok=True)
                for ext in ("ttgir", "ptx"):
                    (args.dump / f"{i}_{r['kernel']}.{ext}").write_text(kernel.asm[ext])
                if "cubin" in kernel.asm:
                    (args.dump / f"{i}_{r['kernel']}.cubin").write_bytes(kernel.asm["cubin"])
            rows.append({"kernel": r["kernel"], **describe(kernel)})
    text = json.dumps({"problem": str(args.problem), "variant": args.variant, "target": "sm_90a", "kernels": rows},
                      indent=1)
    if args.out:
        args.out.write_text(text)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
