"""benchmarks/ptx_report.py: a candidate's Triton kernels compiled for sm_90a on a CPU machine, and
the slow path it exists to show (a TF32 dot whose B tile is N-major in memory fills shared memory
with 4-byte copies)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "ptx_report.py"
PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(128, 256), torch.randn(256, 192)]


def get_init_inputs():
    return []
'''
# what a hand-written candidate (or an LLM's) often looks like: B read as stored, [K, N] row-major
N_MAJOR = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision="PREC")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        _mm[(a.shape[0] // 64, b.shape[1] // 64)](a, b, c, a.shape[0], b.shape[1], a.shape[1],
                                                    BM=64, BN=64, BK=32, num_warps=4, num_stages=3)
        return c
'''


def _report(tmp_path: Path, *extra: str) -> dict:
    problem = tmp_path / "mm.py"
    problem.write_text(PROBLEM)
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    subprocess.run([sys.executable, str(SCRIPT), str(problem), "--out", str(out), *extra], check=True,
                   capture_output=True, text=True, timeout=600, env=env)
    return json.loads(out.read_text())


def test_an_n_major_b_tile_shows_as_narrow_copies_or_stores(tmp_path):
    for precision in ("tf32", "tf32x3"):
        source = tmp_path / f"n_major_{precision}.py"
        source.write_text(N_MAJOR.replace("PREC", precision))
        (kernel,) = _report(tmp_path, "--source", str(source))["kernels"]
        assert kernel["kernel"] == "_mm" and kernel["wgmma"] > 0
        if precision == "tf32":  # copied straight to a K-major shared tile, 4 bytes at a time
            assert kernel["cp_async_bytes"].get("4", 0) > 0, kernel
        else:  # split into hi/lo in registers, then stored K-major one element at a time
            assert kernel["shared_stores"].get("scalar", 0) > 0, kernel


def test_the_experts_3xtf32_gemm_reads_b_k_major(tmp_path):
    """B is N-major and A K-major here: the expert computes B^T A^T (lower_matmul.swaps), so no copy
    of B runs and the GEMM still fills shared memory with 16-byte copies and vector stores only."""
    kernels = _report(tmp_path, "--variant", "triton-matmul-3xtf32")["kernels"]
    (gemm,) = [k for k in kernels if k["wgmma"] > 0]
    assert len(kernels) == 1, kernels
    assert set(gemm["cp_async_bytes"]) == {"16"} and set(gemm["shared_stores"]) == {"v4"}, gemm


def test_the_operand_order_probe_shows_the_swap_without_scalar_stores(tmp_path):
    """benchmarks/operand_order_probe.py: the plain order with an N-major B stores scalars to shared
    memory; the swapped order, tiles loaded transposed, does not (the static case for the swap)."""
    out = tmp_path / "probe.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    subprocess.run([sys.executable, str(SCRIPT.parent / "operand_order_probe.py"), "--out", str(out)], check=True,
                   capture_output=True, text=True, timeout=600, env=env)
    forms = json.loads(out.read_text())["forms"]
    plain = forms["B N-major, A @ B"]
    swapped = next(v for k, v in forms.items() if "tiles loaded transposed" in k)
    assert plain["st_shared_scalar"] > 0 and swapped["st_shared_scalar"] == 0, forms
    assert swapped["cp_async_16_byte"] == swapped["cp_async"] > 0 and swapped["wgmma"] == plain["wgmma"], forms


CONV = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 64, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 16, 40, 48)]


def get_init_inputs():
    return []
'''


def test_the_experts_implicit_gemm_convolution_reads_its_gathered_operand_k_major(tmp_path):
    problem = tmp_path / "conv.py"
    problem.write_text(CONV)
    out = tmp_path / "conv.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    subprocess.run([sys.executable, str(SCRIPT), str(problem), "--variant", "conv-gemm", "--out", str(out)],
                   check=True, capture_output=True, text=True, timeout=600, env=env)
    (gemm,) = [k for k in json.loads(out.read_text())["kernels"] if k["wgmma"] > 0]
    # before 86e98f4 the input was gathered from NCHW memory: 4-byte copies of every B tile
    assert set(gemm["cp_async_bytes"]) == {"16"}, gemm


INT4 = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("q", torch.randint(0, 256, (256, 256), dtype=torch.uint8))
        self.register_buffer("s", torch.rand(256, 4, dtype=torch.bfloat16))

    def forward(self, x):
        low = (self.q & 0xF).to(torch.int8) - 8
        high = (self.q >> 4).to(torch.int8) - 8
        w = torch.stack([low, high], dim=-1).reshape(256, 512)
        w = (w.to(x.dtype).reshape(256, 4, 128) * self.s.unsqueeze(-1)).reshape(256, 512)
        return F.linear(x, w)


def get_inputs():
    return [torch.randn(16, 512, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
'''


def test_the_experts_int4_gemm_loads_each_packed_byte_once_in_16_byte_copies(tmp_path):
    """A bf16 GEMM compiles to bf16 MMAs (the interpreter-only fp32 switch is off, as on a GPU), and
    with K in two phases the packed weight arrives by 16-byte copies only; plain K (K_PHASES = 1)
    loads it a byte per lane, twice: the code the phases replace."""
    from agents.expert.design import analyse, render

    problem = tmp_path / "int4.py"
    problem.write_text(INT4)
    program = analyse(problem, "default")
    (kernel,) = program.variants[0].program.kernels
    found = {}
    for phases in (2, 1):
        source = tmp_path / f"k{phases}.py"
        source.write_text(render(program, program.variants[0], "cuda", {kernel.name: {"K_PHASES": phases}}).source)
        out = tmp_path / f"k{phases}.json"
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        subprocess.run([sys.executable, str(SCRIPT), str(problem), "--source", str(source), "--out", str(out)],
                       check=True, capture_output=True, text=True, timeout=600, env=env)
        (found[phases],) = json.loads(out.read_text())["kernels"]
    assert found[2]["mma_types"] == found[1]["mma_types"] == ["bf16"], found
    assert "8" not in found[2]["ld_global_bits"] and found[2]["cp_async_bytes"].get("16", 0) > 0, found[2]
    assert found[1]["ld_global_bits"].get("8", 0) > 0, found[1]
    assert found[2]["loop_instructions"][0] < found[1]["loop_instructions"][0], found  # per K step, one thread


LOG_SOFTMAX = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.log_softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(4, COLS, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
'''


def test_a_looped_row_runs_its_whole_blocks_without_masks_and_one_exp_unit_op_an_element(tmp_path):
    """A row RBLOCK (2048) does not divide (50000) loops exactly as one it divides (49152): the whole
    blocks run under an all-true mask Triton folds away, the last block alone is masked (before
    2026-12-06 every block was). The lane sums' exps flush subnormals (one MUFU.EX2 each, no compare
    and rescale around it); the second pass's exps, the softmax's outputs, keep them."""
    found = {}
    for cols in (49152, 50000):
        problem = tmp_path / f"log_softmax_{cols}.py"
        problem.write_text(LOG_SOFTMAX.replace("COLS", str(cols)))
        out = tmp_path / f"{cols}.json"
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        subprocess.run([sys.executable, str(SCRIPT), str(problem), "--out", str(out)], check=True,
                       capture_output=True, text=True, timeout=600, env=env)
        (found[cols],) = json.loads(out.read_text())["kernels"]
    whole, ragged = found[49152], found[50000]
    assert len(whole["loop_instructions"]) == len(ragged["loop_instructions"]) == 2, found  # two passes
    assert whole["loop_instructions"] == ragged["loop_instructions"], found
    assert whole["sass_loop_instructions"] == ragged["sass_loop_instructions"] and whole["sass_loop_instructions"], found
    assert whole["ex2_ftz"] > 0 and whole["ex2"] > whole["ex2_ftz"], whole


def test_the_shared_memory_a_launch_asks_for_grows_with_its_pipeline_stages(tmp_path):
    """The report's ``shared_bytes`` is what a launch requests (over the device's opt-in limit it fails
    to launch): each pipeline stage holds another copy of the operand tiles."""
    def gemm(stages: int) -> dict:
        kernels = _report(tmp_path, "--variant", "triton-matmul-3xtf32", "--config", f'{{"num_stages": {stages}}}')
        (kernel,) = [k for k in kernels["kernels"] if k["wgmma"] > 0]
        return kernel

    two, four = gemm(2), gemm(4)
    assert 0 < two["shared_bytes"] < four["shared_bytes"], (two, four)
