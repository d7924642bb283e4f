"""The matmul template: tile loads from the operands' index maps (transposes, broadcast batches,
dequantised weights), fused epilogues, split-K, fp32 dot precisions - through the judge."""

from __future__ import annotations

from pathlib import Path

import pytest
from expert_helpers import WORKLOADS, accepted, check, forced, fp16_copy, launches, problem

from agents.expert.design import design_candidates
from egg.evaluate.harness import Harness

CASES = {
    # name: (args, body, inputs)
    "mm": ("a, b", "return torch.matmul(a, b)", "[torch.randn(37, 29), torch.randn(29, 21)]"),
    "transposed_a": ("a, b", "return a.T @ b", "[torch.randn(29, 37), torch.randn(29, 21)]"),
    "transposed_b": ("a, b", "return torch.mm(a, b.t())", "[torch.randn(37, 29), torch.randn(21, 29)]"),
    "transposed_both": ("a, b", "return a.transpose(0, 1) @ b.T", "[torch.randn(29, 37), torch.randn(21, 29)]"),
    "bmm": ("a, b", "return torch.bmm(a, b)", "[torch.randn(3, 17, 19), torch.randn(3, 19, 23)]"),
    "bmm_transposed_b": ("a, b", "return torch.bmm(a, b.transpose(1, 2))", "[torch.randn(2, 17, 19), torch.randn(2, 23, 19)]"),
    "broadcast_batch": ("a, b", "return torch.matmul(a, b)", "[torch.randn(2, 1, 17, 19), torch.randn(3, 19, 23)]"),
    "tensor3d_matrix": ("a, b", "return torch.matmul(a, b)", "[torch.randn(2, 17, 19), torch.randn(19, 23)]"),
    "matrix_vector": ("a, b", "return torch.matmul(a, b)", "[torch.randn(37, 70), torch.randn(70, 1)]"),
    "vector_matrix": ("a, b", "return torch.matmul(a, b)", "[torch.randn(1, 70), torch.randn(70, 33)]"),
    # rows on 16 bytes (K and N multiples of 4): the 3xTF32 variant computes B^T A^T, no copy
    "mm_aligned": ("a, b", "return torch.matmul(a, b)", "[torch.randn(37, 32), torch.randn(32, 20)]"),
    "bmm_aligned": ("a, b", "return torch.bmm(a, b)", "[torch.randn(3, 17, 24), torch.randn(3, 24, 28)]"),
}

# The 3xTF32 variant's copies before its GEMM (lower_matmul.k_major): tensor cores read fp32 K-major, with
# rows on 16 bytes. B stored [..., K, N] with N contiguous is copied; an operand whose K-contiguous rows
# do not start on 16 bytes (K = 29 or 19 here: 116 or 76 bytes) is copied with padded rows. Where A is
# K-major and both operands' rows start on 16 bytes, the product is computed transposed instead
# (lower_matmul.swaps: B^T A^T), with no copy.
COPIES_3XTF32 = {"mm": 2, "transposed_a": 1, "transposed_b": 2, "transposed_both": 1, "bmm": 2, "bmm_transposed_b": 2,
                 "broadcast_batch": 2, "tensor3d_matrix": 2, "addmm_alpha_beta": 0, "baddbmm_residual": 0,
                 "mm_aligned": 0, "bmm_aligned": 0}
SWAPPED_3XTF32 = {"addmm_alpha_beta", "baddbmm_residual", "mm_aligned", "bmm_aligned"}


def _copies(name: str, variant: str) -> int:
    return COPIES_3XTF32.get(name, 0) if variant == "triton-matmul-3xtf32" else 0


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matmul_alone_is_the_template(name: str, dtype: str, harness: Harness, tmp_path: Path) -> None:
    args, body, inputs = CASES[name]
    path = problem(tmp_path, name, body, inputs.replace(")", f", dtype=torch.{dtype})"), header=f"# args: {args}")
    cands = check(harness, path, tmp_path, every_variant=True)
    template = [c for c in cands if c.variant.startswith("triton-matmul")]
    assert template and all(not c.torch_ops for c in template)
    for c in template:  # fp32 on tensor cores reads B K-major: an N-major B is copied first
        copies = _copies(name, c.variant)
        assert c.kernels == 1 + copies, (c.variant, c.structure)
        assert c.structure.count("pointwise kernel") == copies, c.structure
        swapped = dtype == "float32" and c.variant == "triton-matmul-3xtf32" and name in SWAPPED_3XTF32
        assert ("computed transposed" in c.structure) == swapped, c.structure
    # cuBLAS alone has nothing to fuse; a broadcast batch needs its expanded copy written for it
    assert all(c.variant != "fused" for c in cands) or name == "broadcast_batch"


EPILOGUES = {
    "linear_relu_scale": ("x", "return torch.relu(self.fc(x)) * 0.5", "[torch.randn(5, 3, 24)]", "self.fc = nn.Linear(24, 40)",
                          ["aten.addmm"]),
    "addmm_alpha_beta": ("b, x, w", "return torch.addmm(b, x, w, beta=0.5, alpha=2.0).tanh()",
                         "[torch.randn(40), torch.randn(9, 24), torch.randn(24, 40)]", "", ["aten.addmm"]),
    "baddbmm_residual": ("b, x, w", "return torch.baddbmm(b, x, w) + b",
                         "[torch.randn(2, 9, 40), torch.randn(2, 9, 24), torch.randn(2, 24, 40)]", "", ["aten.bmm"]),
    "bmm_softmax": ("q, k", "return torch.softmax(q @ k.transpose(-1, -2) * 0.3, -1)",
                    "[torch.randn(2, 3, 9, 16), torch.randn(2, 3, 9, 16)]", "", ["aten.bmm"]),
    # KernelBench level 2 #56: the row sum joins the GEMM's epilogue (a row fits one tile)
    "linear_sigmoid_rowsum": ("x", "return torch.sigmoid(self.fc(x)).sum(-1, keepdim=True)", "[torch.randn(2, 9, 24)]",
                              "self.fc = nn.Linear(24, 40)", ["aten.addmm"]),
    "linear_logsumexp_gelu": ("x", "return F.gelu(torch.logsumexp(self.fc(x) - 0.5, -1))", "[torch.randn(7, 24)]",
                              "self.fc = nn.Linear(24, 33)", ["aten.addmm"]),
    # BERT's post-LN (BertSelfOutput): a Welford mean and variance over the GEMM's rows; until
    # 2026-12-06 the epilogue divided the mean by the matmul kernel's rnumel (1), not by N
    "linear_residual_layer_norm": ("x, y", "return self.norm(self.fc(x) + y)",
                                   "[torch.randn(2, 7, 24), torch.randn(2, 7, 40)]",
                                   "self.fc = nn.Linear(24, 40)\nself.norm = nn.LayerNorm(40, eps=1e-12)", ["aten.addmm"]),
    "matmul_layer_norm_functional": ("x, w", "return F.layer_norm(x @ w.t(), (64,))",
                                     "[torch.randn(9, 24), torch.randn(64, 24)]", "", ["aten.mm"]),
}


@pytest.mark.parametrize("name", sorted(EPILOGUES))
def test_matmul_with_its_neighbours(name: str, harness: Harness, tmp_path: Path) -> None:
    """fused: the library matmul and one kernel after it; triton-matmul: the epilogue in the GEMM."""
    args, body, inputs, init, ops = EPILOGUES[name]
    path = problem(tmp_path, name, body, inputs, init=init, header=f"# args: {args}")
    cands = check(harness, path, tmp_path, kernels=1, torch_ops=ops, every_variant=True)
    template = [c for c in cands if c.variant.startswith("triton-matmul")]
    assert template and all(not c.torch_ops for c in template)
    # the epilogue (row reductions too) is in the GEMM
    assert all(c.kernels == 1 + _copies(name, c.variant) for c in template), [c.structure for c in template]
    assert all(("computed transposed" in c.structure) == (c.variant == "triton-matmul-3xtf32" and name in SWAPPED_3XTF32)
               for c in template), [c.structure for c in template]


INT8 = """w = self.weight.to(x.dtype) * self.scale.unsqueeze(1)
return F.linear(x, w)"""
INT8_INIT = """w = torch.randn(48, 64) * 0.02
scale = w.abs().amax(dim=1) / 127.0
self.register_buffer("weight", torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8))
self.register_buffer("scale", scale.to(DTYPE))"""


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_int8_weight_is_dequantised_in_the_gemm(dtype: str, harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "int8", INT8, f"[torch.randn(5, 64, dtype=DTYPE)]", init=INT8_INIT,
                   header=f"DTYPE = torch.{dtype}")
    cands = check(harness, path, tmp_path, kernels=1, torch_ops=[], every_variant=True)
    assert "int8" not in cands[0].structure or "prologue" in cands[0].structure
    assert "torch.ops.aten" not in cands[0].source.split("class ModelNew")[1]


@pytest.mark.parametrize(("k", "masked"), [(1024, False), (1040, True)])
def test_forced_split_k_is_accepted(k: int, masked: bool, harness: Harness, tmp_path: Path) -> None:
    """Split-K slices are whole K steps: where they divide K no step runs past its slice, so the K
    loop carries no masks (each a select an element; the int4 workload's loop went from 344 to 563
    instructions a step with them); where the last slice is short (1040 = 3 x 288 + 176) it does."""
    path = problem(tmp_path, "splitk", "return torch.mm(a, b) + 1", f"[torch.randn(9, {k}), torch.randn({k}, 12)]",
                   header="# args: a, b")
    c = forced(path, variant=1, SPLIT_K=4, BLOCK_K=32)
    assert c.config.kernels[0].config["SPLIT_K"] == 4
    assert ("kmask_b" in c.source) is masked
    verdict = accepted(harness, path, c.source, "default", tmp_path / "split")
    assert launches(verdict) == c.kernels == 2


@pytest.mark.parametrize(("inputs", "config"), [
    ("[torch.randn(37, 72), torch.randn(72, 44), torch.randn(37, 44)]", {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32}),
    ("[torch.randn(9, 1024), torch.randn(1024, 12), torch.randn(9, 12)]", {"SPLIT_K": 4, "BLOCK_K": 32}),
])
def test_a_swapped_3xtf32_gemm_is_right_on_ragged_tiles_and_split_k(inputs: str, config: dict, harness: Harness,
                                                                  tmp_path: Path) -> None:
    """B^T A^T (lower_matmul.swaps) with tiles that divide neither M, N nor K, an epilogue reading
    the output by (m, n), and split-K partials stored after the accumulator is transposed back."""
    path = problem(tmp_path, "swapped", "return torch.relu(torch.mm(a, b) - c)", inputs, header="# args: a, b, c")
    index = [c.variant for c in design_candidates(path)].index("triton-matmul-3xtf32")
    c = forced(path, variant=index, **config)
    assert "computed transposed" in c.structure and "tl.trans(acc_t)" in c.source, c.structure
    verdict = accepted(harness, path, c.source, "default", tmp_path / "judged")
    assert launches(verdict) == c.kernels == (2 if "SPLIT_K" in config else 1)


def test_fp32_precision_variants(tmp_path: Path) -> None:
    path = problem(tmp_path, "p", "return torch.mm(a, b)", "[torch.randn(9, 32), torch.randn(32, 12)]", header="# args: a, b")
    sources = {c.variant: c.source for c in design_candidates(path)}
    assert 'input_precision="ieee"' in sources["triton-matmul-ieee"]
    assert 'input_precision="tf32x3"' in sources["triton-matmul-3xtf32"]


def test_fp32_tensor_core_variants_get_their_tiles_on_the_gpu(tmp_path: Path) -> None:
    """``default_config`` cannot see a variant's precision: the GPU render gives a TF32 GEMM (here a
    convolution's, TF32 under PyTorch's default flags) its own tiles instead of the ieee variant's
    (until 2026-12-03 every fp32 variant got the ieee tiles), and a tuning move is kept as given, even
    one onto the ieee tiles' values."""
    from agents.expert.design import analyse, render

    path = problem(tmp_path, "conv", "return torch.relu(self.conv(x))", "[torch.randn(8, 64, 66, 65)]",
                   init="self.conv = nn.Conv2d(64, 128, 3)")
    program = analyse(path)
    variant = program.variant("conv-gemm")
    parent = next(k for k in render(program, variant, "cuda").config.kernels if k.template == "matmul")
    assert (parent.config["BLOCK_M"], parent.config["BLOCK_N"], parent.config["num_warps"]) == (128, 128, 4)
    move = {**parent.config, "BLOCK_M": 32}  # a tuner's move: the parent's config with one value changed
    assert _gemm(render(program, variant, "cuda", {parent.kernel: move})) == move
    # a move onto the ieee tiles' values is a move too (until 2026-12-06 it was re-rendered with the
    # TF32 tiles, so a tuner could never try 64 x 64 x 32, the best config measured on level 2 #16)
    move = {**parent.config, **{k: v for k, v in program_defaults(program).items()}}
    tiles = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
    assert {k: _gemm(render(program, variant, "cuda", {parent.kernel: move}))[k] for k in tiles} == \
        {k: move[k] for k in tiles} != {k: parent.config[k] for k in tiles}
    # a caller that sets one value (a remembered move, a forced config) keeps the TF32 tiles' others
    assert _gemm(render(program, variant, "cuda", {parent.kernel: {"BLOCK_M": 32}})) == {**parent.config, "BLOCK_M": 32}
    gemm = problem(tmp_path, "gemm", "return torch.matmul(a, b)", "[torch.randn(4096, 4096), torch.randn(4096, 4096)]",
                   header="# args: a, b")
    program = analyse(gemm)
    for vid in ("triton-matmul-ieee", "triton-matmul-3xtf32"):
        cfg = _gemm(render(program, program.variant(vid), "cuda"))
        assert (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"]) == (64, 64, 4), (vid, cfg)


def _gemm(cand: object) -> dict:
    return next(k.config for k in cand.config.kernels if k.template == "matmul")  # type: ignore[attr-defined]


def program_defaults(program: object) -> dict:
    """The template's precision-blind defaults for the program's one matmul kernel (GPU)."""
    from agents.expert.templates import template_for

    kernel = next(k for k in program.variant("conv-gemm").program.kernels if k.kind == "matmul")  # type: ignore[attr-defined]
    return template_for(kernel).default_config(kernel, "cuda")


@pytest.mark.parametrize(("inputs", "thin"), [("[torch.randn(37, 70), torch.randn(70, 1)]", "BLOCK_N"),
                                              ("[torch.randn(1, 70), torch.randn(70, 33)]", "BLOCK_M")])
def test_fp32_matrix_vector_products_get_an_fma_variant(inputs: str, thin: str, tmp_path: Path) -> None:
    """KernelBench level 1 #4 (2048 x 1M fp32 times a vector) ran a 16-wide padded dot at 0.33-0.53x of
    cuBLAS's GEMV: the FMA form reads the matrix once with no padded side (the judge runs it in
    test_matmul_alone_is_the_template's matrix_vector and vector_matrix cases)."""
    from agents.expert.design import analyse, render
    from agents.expert.templates import template_for

    path = problem(tmp_path, "mv", "return torch.matmul(a, b)", inputs, header="# args: a, b")
    program = analyse(path)
    fma = next(v for v in program.variants if v.id == "triton-matmul-fma")
    for device in ("cpu", "cuda"):
        c = render(program, fma, device)
        assert "tl.dot" not in c.source and "tl.sum(a[:, :, None] * b[None, :, :], axis=1)" in c.source
        assert c.config.kernels[0].config[thin] == 1 and "no dot" in c.structure
    # a tuning move stands, one onto the dot's default BLOCK_K too (until 2026-12-06 a value equal to
    # the dot's default read as no move and was re-rendered with the matvec tiles' 512)
    (kernel,) = fma.program.kernels
    first = render(program, fma, "cuda")
    parent = first.config.kernels[0].config
    dot_k = template_for(kernel).default_config(kernel, "cuda")["BLOCK_K"]
    assert parent["BLOCK_K"] != dot_k
    moved = render(program, fma, "cuda", {kernel.name: {**parent, "BLOCK_K": dot_k}})
    assert moved.config.kernels[0].config["BLOCK_K"] == dot_k and moved.source != first.source
    # an ordinary GEMM has no such variant
    gemm = problem(tmp_path, "gemm", "return torch.matmul(a, b)", "[torch.randn(9, 32), torch.randn(32, 12)]",
                   header="# args: a, b")
    assert "triton-matmul-fma" not in {v.id for v in analyse(gemm).variants}


@pytest.mark.parametrize("name", ["int8_weight_only_linear", "int4_weight_only_linear"])
def test_weight_only_workload_gpu_defaults_read_the_weight_in_long_tiles(name: str) -> None:
    """At decode sizes the GEMM is bound by the weight read: small BLOCK_M, long BLOCK_K, a wave of
    BLOCK_N programs (the H200 heuristic, checked without a GPU). The int4 weight is a uint8 load
    unpacked by masks and shifts in the B prologue: the same dequantising GEMM."""
    from agents.expert.design import analyse
    from agents.expert.templates import template_for

    program = analyse(WORKLOADS / f"{name}.py", "default")
    (kernel,) = program.variants[0].program.kernels
    cfg = template_for(kernel).default_config(kernel, "cuda")
    assert cfg["BLOCK_M"] == 16 and cfg["BLOCK_K"] == 128 and cfg["num_stages"] >= 4
    assert (16 // cfg["BLOCK_M"]) * (14336 // cfg["BLOCK_N"]) >= 132


def test_int4_gemm_gpu_config_at_odd_shapes(harness: Harness, tmp_path: Path) -> None:
    """The int4 workload's GPU render (split-K and the long decode tiles where they apply) on the
    odd set: 1000 input features (500 packed bytes a row, not 16-byte aligned) in groups of 40, so
    tiles straddle groups and the K tail masks half a byte's pair; fp16, run by the interpreter."""
    path = fp16_copy("int4_weight_only_linear", tmp_path)
    c = design_candidates(path, "odd", "cuda")[0]
    assert c.torch_ops == [] and c.kernels == 1, c.structure
    accepted(harness, path, c.source, "odd", tmp_path / "cuda")


# A GEMM whose output is masked by position: tiles the mask zeroes whole skip their K loop.
TRIANGULAR = {
    "triu": ("return torch.triu(torch.matmul(a, b))", True),
    "tril_below_diagonal": ("return torch.tril(a @ b, diagonal=-3)", True),
    "triu_far_diagonal": ("return torch.triu(a @ b, 70)", True),
    "causal_where": ("s = a @ b\nrow = torch.arange(s.shape[0])[:, None]\ncol = torch.arange(s.shape[1])[None, :]\n"
                     "return torch.where(col <= row, s, torch.zeros_like(s))", True),
    "triu_then_shift": ("return torch.triu(a @ b) + 1", False),  # no element is zero: nothing to skip
}
JUDGED = {"tril_below_diagonal", "triu_then_shift"}  # the rendered kernels the judge runs (CI time)


@pytest.mark.parametrize("name", sorted(TRIANGULAR))
def test_triangular_output_skips_exactly_the_zeroed_tiles(name: str, harness: Harness, tmp_path: Path) -> None:
    import torch

    from agents.expert.design import analyse
    from agents.expert.templates.matmul import zero_tile_test

    forward, skips = TRIANGULAR[name]
    path = problem(tmp_path, name, forward, "[torch.randn(128, 96), torch.randn(96, 128)]", header="# args: a, b")
    program = analyse(path, "default")
    variant = next(v for v in program.variants if v.id == "triton-matmul-ieee")
    test = zero_tile_test(variant.program.kernels[0])
    assert (test is not None) == skips, test
    if test:  # the test against the mask itself, tile by tile, at several tile sizes
        import importlib.util

        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kept = module.Model()(torch.ones(128, 96), torch.ones(96, 128)) != 0
        for bm, bn in ((16, 16), (64, 32), (32, 128)):
            for i in range(128 // bm):
                for j in range(128 // bn):
                    zero = not bool(kept[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn].any())
                    skip = bool(eval(test, {"pid_m": i, "pid_n": j, "BLOCK_M": bm, "BLOCK_N": bn}))  # noqa: S307
                    assert skip == zero, (name, bm, bn, i, j, test)
    c = next(c for c in design_candidates(path) if c.variant == "triton-matmul-ieee")
    assert ("zeroed tiles skip the K loop" in c.structure) == skips
    if name in JUDGED:  # the others differ from these only in the test, checked against the mask above
        accepted(harness, path, c.source, "default", tmp_path / name)


def test_a_tf32_problem_gets_operands_rounded_in_memory(harness: Harness, tmp_path: Path) -> None:
    """``ALLOW_TF32 = True``: the TF32 variant's GEMM loads operands a pass rounded to TF32 (on the
    GPU; exact in the interpreter, whose dot is exact fp32), never rounding tiles in its K loop, and
    a TF32 dot asked of operands nobody rounded is refused at render time, not truncated."""
    import dataclasses

    from agents.expert.design import analyse, render

    path = problem(tmp_path, "gemm", "return torch.relu(a @ b)", "[torch.randn(40, 70), torch.randn(70, 50)]",
                   header="# args: a, b\nALLOW_TF32 = True")
    program = analyse(path)
    gpu = render(program, program.variant("triton-matmul-tf32"), "cuda").source
    gemm = next(k for k in gpu.split("@triton.jit") if "tl.dot(" in k)
    assert 'input_precision="tf32"' in gemm and "_egg_round_tf32" not in gemm
    assert gpu.count("= _egg_round_tf32(") == 2  # a and b, one pass each
    # the passes write what tensor cores read: K-major rows on 16 bytes (K = 70 padded to 72); b's is a
    # tiled transpose, so it keeps a launch of its own instead of joining a's in a flat combo kernel
    assert "torch.empty_strided((40, 70), (72, 1)" in gpu and "torch.empty_strided((70, 50), (1, 72)" in gpu
    cpu = next(c for c in design_candidates(path) if c.variant == "triton-matmul-tf32")
    assert "= _egg_round_tf32(" not in cpu.source
    verdict = accepted(harness, path, cpu.source, "default", tmp_path / "judged")
    assert launches(verdict) == cpu.kernels == 3
    unrounded = dataclasses.replace(program.variant("triton-matmul-ieee"), precision="tf32")
    with pytest.raises(ValueError, match="operands rounded in memory"):
        render(program, unrounded, "cuda")
