"""What Triton 3.6 compiles a 3xTF32 GEMM tile loop to for sm_90a, by operand order (no GPU needed).

The question behind ``agents/expert/ir/lower_matmul.swaps``: with B stored N-major ([K, N], N
contiguous), is ``C^T = B^T A^T`` (tiles loaded transposed) as good as copying B K-major first?
Four forms of one 64 x 64 x 32 tile loop, 4 warps, 3 stages, compiled with ``triton.compile``;
per form: wgmma instructions, 16-byte and all ``cp.async`` copies, vector and scalar shared-memory
stores, shared loads, and the instructions of the K loop's body.

    python benchmarks/operand_order_probe.py [--out JSON]

Static properties, not timings: the judge measures those.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "0"  # real JIT functions: this compiles, it runs nothing

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402


@triton.jit
def _gemm(a_ptr, b_ptr, c_ptr, M, N, K, sbk, sbn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
          FORM: tl.constexpr):
    # A [M, K] K-contiguous; B [K, N] with strides (sbk, sbn); C [M, N]
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], tl.float32)
    acc_t = tl.zeros([BN, BM], tl.float32)
    for k in range(0, K, BK):
        if FORM == 2:  # the tiles loaded transposed: B^T [BN, BK] (the dot's A), A^T [BK, BM] (its B)
            bt = tl.load(b_ptr + (k + rk)[None, :] * sbk + rn[:, None] * sbn)
            at = tl.load(a_ptr + rm[None, :] * K + (k + rk)[:, None])
            acc_t += tl.dot(bt, at, input_precision="tf32x3")
        elif FORM == 1:  # the plain tiles, transposed in registers
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
            acc_t += tl.dot(tl.trans(b), tl.trans(a), input_precision="tf32x3")
        else:
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
            acc += tl.dot(a, b, input_precision="tf32x3")
    if FORM > 0:
        acc = tl.trans(acc_t)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


FORMS = {  # name: (FORM, B K-major in memory)
    "B copied K-major first, A @ B": (0, True),
    "B N-major, A @ B": (0, False),
    "B N-major, B^T A^T by tl.trans": (1, False),
    "B N-major, B^T A^T, tiles loaded transposed (the expert's form)": (2, False),
}


def compile_form(form: int, kmajor: bool) -> dict[str, Any]:
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "sbk": "i32",
           "sbn": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "FORM": "constexpr"}
    consts: dict[str, Any] = {"BM": 64, "BN": 64, "BK": 32, "FORM": form}
    unit = "sbk" if kmajor else "sbn"  # the stride that is 1
    sig[unit], consts[unit] = "constexpr", 1
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(sig) if name not in consts}
    kernel = triton.compile(ASTSource(_gemm, sig, consts, attrs), target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": 4, "num_stages": 3})
    ptx: str = kernel.asm["ptx"]
    start = ptx.find("Inner Loop Header")
    body = ptx[start:ptx.find("bra", start)].splitlines()[1:]
    loop = [ln for ln in body if ln.strip() and not ln.strip().startswith(("//", "$", ".loc"))]
    copies = re.findall(r"cp\.async\.c[ag]\.shared\.global\S*\s+\[[^\]]+\],\s*\[[^\]]+\],\s*(0x\w+|\d+)", ptx)
    return {"wgmma": ptx.count("wgmma.mma_async"), "cp_async_16_byte": sum(int(c, 0) == 16 for c in copies),
            "cp_async": len(copies), "st_shared_v4": len(re.findall(r"st\.shared\.v4", ptx)),
            "st_shared_scalar": len(re.findall(r"st\.shared\.[bf]32", ptx)), "ld_shared": len(re.findall(r"ld\.shared", ptx)),
            "loop_instructions": len(loop)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rows = {name: compile_form(form, kmajor) for name, (form, kmajor) in FORMS.items()}
    text = json.dumps({"target": "sm_90a", "triton": triton.__version__, "tile": "64 x 64 x 32, 4 warps, 3 stages",
                       "forms": rows}, indent=1)
    if args.out:
        args.out.write_text(text)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
