"""On the H200 (``python -m pytest -m gpu tests/agents/expert``): every workload's variants at its
production shapes and the codegen's templates compiled by real Triton, judged on the GPU (what the
interpreter cannot show: compile errors, bf16 arithmetic, tensor-core dots, int64 offsets)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from expert_helpers import WORKLOADS, forced, launches, offered, problem

from agents.expert.design import design_candidates
from egg.evaluate.harness import EvalOptions, Harness

pytestmark = pytest.mark.gpu
NAMES = sorted(p.stem for p in WORKLOADS.glob("*.py") if p.stem != "__init__")


@pytest.fixture(scope="module")
def gpu() -> Iterator[Harness]:
    with Harness(device="cuda") as h:
        yield h


def _judge(h: Harness, path: Path, source: str, where: Path, shapes: str = "default") -> object:
    where.mkdir(parents=True, exist_ok=True)
    (where / "candidate.py").write_text(source)
    return h.evaluate(path, where / "candidate.py", EvalOptions(device="cuda", timeout_s=600, shapes=shapes), where)


def _all_accepted(gpu: Harness, path: Path, cands: list, where: Path, count_launches: bool = True) -> None:
    """Judge every candidate on the GPU: each accepted, and (``count_launches``) launching as many
    generated kernels per call as it was rendered with."""
    for i, c in enumerate(cands):
        verdict = _judge(gpu, path, c.source, where / f"{i}")
        assert verdict.accepted, (c.variant, verdict.stage_failed, verdict.reasons)  # type: ignore[attr-defined]
        if count_launches:
            assert launches(verdict) == c.kernels, (c.variant, c.structure)


@pytest.mark.parametrize("name", NAMES)
def test_workload_variants_on_the_gpu(name: str, gpu: Harness, tmp_path: Path) -> None:
    path = WORKLOADS / f"{name}.py"
    _all_accepted(gpu, path, design_candidates(path, "default", "cuda"), tmp_path)


LOOPED = {
    "softmax_online": ("return torch.softmax(x, -1)", "[torch.randn(64, 70000, dtype=torch.bfloat16)]"),
    # about half the rows hold a NaN: the GPU's max ignores NaN, the online pass must still return it
    "softmax_online_nan": ("return torch.softmax(x, -1), x.amax(-1)",
                           "[torch.where(torch.rand(64, 70000) < 1e-5, float('nan'), torch.randn(64, 70000))]"),
    "welford": ("return F.layer_norm(x, (30000,))", "[torch.randn(64, 30000)]"),
    "column_norm": ("return F.normalize(x, dim=1)", "[torch.randn(16, 256, 64, 64)]"),
    "split_total": ("return (x - x.mean()).abs().sum()", "[torch.randn(4096, 4096)]"),
    "argmax": ("return x.argmax(1), x.amin(0)", "[torch.randn(1024, 3000)]"),
    "scan": ("return x.cumsum(1), x.flip(1).cumprod(1).flip(1)", "[torch.rand(512, 5000) + 0.5]"),
    "big_offsets": ("return x * 2 + 1", "[torch.randn(2**31 + 64, dtype=torch.float16)]"),
    # a padding mask whose discarded reads are predicated on 16-byte runs (where_loads), looped rows
    "masked_reads_looped": ("r = torch.arange(30000, device=x.device)\n"
                            "return torch.softmax(x.masked_fill(r > 12345, float('-inf')), -1)",
                            "[torch.randn(64, 30000, dtype=torch.bfloat16)]"),
    # order statistics: the kept-key sweep, and ties at the top that send rows through the per-bit sweeps
    "kthvalue_long": ("return torch.kthvalue(x, 777, dim=-1).values", "[torch.randn(256, 50000)]"),
    "topk_threshold_tied": ("t = torch.topk(x, 300).values[:, -1:]\nreturn torch.where(x < t, 0.0, x)",
                            "[torch.randint(-4, 4, (64, 70000)).to(torch.bfloat16)]"),
}


@pytest.mark.parametrize("name", sorted(LOOPED))
def test_structures_compile_and_match_on_the_gpu(name: str, gpu: Harness, tmp_path: Path) -> None:
    body, inputs = LOOPED[name]
    path = problem(tmp_path, name, body, inputs)
    _all_accepted(gpu, path, design_candidates(path, "default", "cuda"), tmp_path, count_launches=False)


@pytest.mark.parametrize("mode", ["lane", "row"])
@pytest.mark.parametrize("name", ["softmax_online", "softmax_online_nan", "masked_reads_looped"])
def test_online_softmax_with_either_running_max_on_the_gpu(name: str, mode: str, gpu: Harness, tmp_path: Path) -> None:
    """ONLINE_MAX "lane" (the default) and "row" (the mapping search's move) compiled by real Triton:
    the GPU's max ignores NaN unless asked, and bf16 rows masked to -inf start lanes late. On a GPU
    the lane sums' exps are one ex2.approx.ftz each (_egg_exp2_ftz, inline PTX)."""
    body, inputs = LOOPED[name]
    path = problem(tmp_path, name, body, inputs)
    c = forced(path, device="cuda", PERSISTENT=False, ONLINE_MAX=mode)
    assert ("_egg_exp2_ftz(tl.abs(" in c.source) == (mode == "lane")
    _all_accepted(gpu, path, [c], tmp_path, count_launches=False)


# half the rows' 50th largest is +0.0 with -0.0 below it (the float test keeps those, the keys do not)
SIGNED_ZERO_ROWS = ("[torch.cat([torch.randn(32, 70000), torch.cat([torch.rand(32, 40) + 1, torch.zeros(32, 10), "
                    "-torch.zeros(32, 20), -torch.rand(32, 69930) - 1], 1)]).to(torch.bfloat16)]")


@pytest.mark.parametrize(("kept", "stores"), [(True, True), (True, False), (False, False)])
def test_top_k_softmax_from_the_kept_keys_on_the_gpu(kept: bool, stores: bool, gpu: Harness, tmp_path: Path) -> None:
    """KEPT_REDUCE True (the default: the softmax's max and sum from the lanes' kept keys, in an
    if/else around the pass) and False, KEPT_STORE True (the probabilities written from the kept
    keys and their positions, no read) and False, compiled by real Triton on long bf16 rows."""
    body = "t = torch.topk(x, 50).values[:, -1:]\nreturn torch.softmax(x.masked_fill(x < t, float('-inf')), -1)"
    path = problem(tmp_path, "topk_kept", body, SIGNED_ZERO_ROWS)
    c = forced(path, device="cuda", PERSISTENT=False, KEPT_REDUCE=kept, KEPT_STORE=stores)
    assert ("every kept element is a lane's kept key: reduce" in c.source) == kept
    assert ("the stores need no read" in c.source) == stores
    _all_accepted(gpu, path, [c], tmp_path, count_launches=False)


def test_split_k_and_dequant_gemm_on_the_gpu(gpu: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "splitk", "return torch.mm(a, b).relu()",
                   "[torch.randn(16, 8192, dtype=torch.bfloat16), torch.randn(8192, 64, dtype=torch.bfloat16)]",
                   header="# args: a, b")
    c = forced(path, variant=1, device="cuda", SPLIT_K=8)
    verdict = _judge(gpu, path, c.source, tmp_path / "split")
    assert verdict.accepted and c.kernels == 2, verdict.reasons  # type: ignore[attr-defined]


def test_fp32_matrix_vector_fma_variant_on_the_gpu(gpu: Harness, tmp_path: Path) -> None:
    # KernelBench level 1 #4's form at a smaller size: the FMA variant (no padded dot), both thin sides
    for name, inputs in (("mv", "[torch.randn(1024, 65536), torch.randn(65536, 1)]"),
                         ("vm", "[torch.randn(1, 65536), torch.randn(65536, 512)]")):
        path = problem(tmp_path, name, "return torch.matmul(a, b)", inputs, header="# args: a, b")
        c = next(c for c in design_candidates(path, "default", "cuda") if c.variant == "triton-matmul-fma")
        verdict = _judge(gpu, path, c.source, tmp_path / name)
        assert verdict.accepted and "tl.dot" not in c.source, verdict.reasons  # type: ignore[attr-defined]


@pytest.mark.parametrize(("body", "inputs", "copies"), [
    # B N-major, A K-major, rows on 16 bytes: computed as B^T A^T, nothing copied (lower_matmul.swaps)
    ("return torch.mm(a, b)", "[torch.randn(1000, 1500), torch.randn(1500, 700)]", 0),
    ("return torch.bmm(a, b)", "[torch.randn(3, 257, 1024), torch.randn(3, 1024, 300)]", 0),
    ("return a.t() @ b", "[torch.randn(1500, 1000), torch.randn(1500, 700)]", 1),  # A M-major: B copied
    # K = 2049: A's rows do not start on 16 bytes, so A is copied with padded rows too
    ("return torch.addmm(c, a, b).relu()", "[torch.randn(700), torch.randn(513, 2049), torch.randn(2049, 700)]", 2),
    ("return a @ b.t()", "[torch.randn(1000, 1500), torch.randn(700, 1500)]", 0),  # B K-major already
    ("return a @ b.t()", "[torch.randn(1000, 1501), torch.randn(700, 1501)]", 2),  # K-major, rows unaligned
])
def test_fp32_tensor_core_gemms_read_b_k_major_on_the_gpu(body: str, inputs: str, copies: int, gpu: Harness,
                                                           tmp_path: Path) -> None:
    """3xTF32 on Hopper's tensor cores: an N-major B is copied K-major by a tiled transpose first
    unless the product is computed transposed (B^T A^T), rows that do not start on 16 bytes are copied
    padded (lower_matmul.k_major); the copies and the GEMM compile and stay within fp32's tolerance."""
    args = "c, a, b" if "addmm" in body else "a, b"
    path = problem(tmp_path, "g", body, inputs, header=f"# args: {args}")
    c = next(c for c in design_candidates(path, "default", "cuda") if c.variant == "triton-matmul-3xtf32")
    assert c.kernels == 1 + copies, c.structure
    verdict = _judge(gpu, path, c.source, tmp_path / "g")
    assert verdict.accepted, (verdict.stage_failed, verdict.reasons)  # type: ignore[attr-defined]
    assert launches(verdict) == c.kernels


@pytest.mark.parametrize("body", [
    "s = torch.matmul(q.float(), k.float().transpose(-2, -1)) * 0.125\nreturn torch.softmax(s, dim=-1).to(q.dtype) @ v",
    "return F.linear(q.flatten(0, 2).float(), k.flatten(0, 2)[:512].float())",
])
def test_upcast_operands_multiply_on_16_bit_tensor_cores_on_the_gpu(body: str, gpu: Harness, tmp_path: Path) -> None:
    """fp32 products of bf16 values (lower_matmul.exact_halves) as bf16 dots into fp32 sums: they
    compile to 16-bit tensor-core dots and stay within fp32's tolerance of the fp64 run."""
    path = problem(tmp_path, "u", body, "[torch.randn(8, 12, 256, 64, dtype=torch.bfloat16) * 1.5 for _ in range(3)]",
                   header="# args: q, k, v")
    c = next(c for c in design_candidates(path, "default", "cuda") if c.variant == "triton-matmul-halves")
    verdict = _judge(gpu, path, c.source, tmp_path / "u")
    assert verdict.accepted, (verdict.stage_failed, verdict.reasons)  # type: ignore[attr-defined]
    assert launches(verdict) == c.kernels


@pytest.mark.parametrize("body,seq,dim", [
    ("s = torch.matmul(q.float(), k.float().transpose(-2, -1)) * 0.125\nreturn torch.softmax(s, dim=-1).to(q.dtype) @ v",
     256, 64),
    ("return torch.softmax(q @ k.mT * 0.1, -1) @ v", 197, 80),  # bf16 scores; both tiles masked
    # rows longer than one tile (templates/matmul_rows.py): one pass over N, flash attention's
    ("s = torch.matmul(q.float(), k.float().transpose(-2, -1)) * 0.125\nreturn torch.softmax(s, dim=-1).to(q.dtype) @ v",
     1024, 64),
    ("return torch.softmax(q @ k.mT * 0.1, -1) @ v", 700, 96),  # the last block and the head dim masked
])
def test_chained_attention_is_one_kernel_on_the_gpu(body: str, seq: int, dim: int, gpu: Harness, tmp_path: Path) -> None:
    """P @ V on the first GEMM's tile (templates/matmul_chain.py): bf16 dots on the tensor cores,
    the probabilities never written, one launch, within the problem's tolerance."""
    path = problem(tmp_path, "c", body, f"[torch.randn(8, 12, {seq}, {dim}, dtype=torch.bfloat16) * 1.5 for _ in range(3)]",
                   header="# args: q, k, v")
    c = next(c for c in design_candidates(path, "default", "cuda") if c.variant == "triton-matmul-chained")
    assert c.kernels == 1, c.structure
    verdict = _judge(gpu, path, c.source, tmp_path / "c")
    assert verdict.accepted, (verdict.stage_failed, verdict.reasons)  # type: ignore[attr-defined]
    assert launches(verdict) == 1


@pytest.mark.parametrize("body,inputs,args", [
    # transformers' eager attention: bf16, an additive causal mask of 0 / finfo.min
    ("w = torch.matmul(q, k.transpose(2, 3)) * 0.088 + mask\n"
     "return torch.matmul(F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype), v)",
     "[*(torch.randn(2, 8, 1024, 128, dtype=torch.bfloat16) for _ in range(3)), torch.zeros(1024, 1024, "
     "dtype=torch.bfloat16).masked_fill(~torch.ones(1024, 1024, dtype=torch.bool).tril(), "
     "torch.finfo(torch.bfloat16).min)[None, None].expand(2, 1, 1024, 1024).contiguous()]", "q, k, v, mask"),
    # a causal triu of index comparisons built in the forward, masked_fill(-inf), 700 keys (partial blocks)
    ("T = q.size(-2)\ncausal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=q.device), 1)\n"
     "return (q @ k.mT * 0.1).masked_fill(causal, float('-inf')).softmax(-1) @ v",
     "[torch.randn(4, 12, 700, 64, dtype=torch.bfloat16) * 1.5 for _ in range(3)]", "q, k, v"),
])
def test_masked_key_blocks_are_skipped_on_the_gpu(body: str, inputs: str, args: str, gpu: Harness, tmp_path: Path) -> None:
    """Flash attention's one pass skips the key blocks a causal mask removes (templates/matmul_rows.py
    dead_block): one launch, within the problem's tolerance."""
    path = problem(tmp_path, "m", body, inputs, header=f"import torch.nn.functional as F\n# args: {args}")
    c = next(c for c in design_candidates(path, "default", "cuda") if c.variant == "triton-matmul-chained")
    assert c.kernels == 1 and "key blocks the mask removes skipped" in c.structure, c.structure
    verdict = _judge(gpu, path, c.source, tmp_path / "m")
    assert verdict.accepted, (verdict.stage_failed, verdict.reasons)  # type: ignore[attr-defined]
    assert launches(verdict) == 1


def test_direct_launch_relaunches_the_compiled_kernel_and_falls_back_when_misaligned(tmp_path: Path) -> None:
    """The launch path (agents/expert/templates/launch.py): the first call keeps the compiled
    kernel, later calls relaunch it directly; a misaligned input takes JITFunction.run again."""
    import importlib.util

    import torch

    path = problem(tmp_path, "affine", "return x * 2 + 1", "[torch.randn(1 << 20)]")
    c = design_candidates(path, "default", "cuda")[0]
    (tmp_path / "cand.py").write_text(c.source)
    spec = importlib.util.spec_from_file_location("direct_cand", tmp_path / "cand.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    states = [n for n in vars(module) if n.endswith("_launch_k0")]
    assert states and all(getattr(module, n) is None for n in states)
    model = module.ModelNew().cuda()
    x = torch.randn(1 << 20, device="cuda")
    assert torch.equal(model(x), x * 2 + 1)
    assert all(getattr(module, n) is not None for n in states)  # kept by the first launch
    kept = {n: getattr(module, n) for n in states}
    y = torch.randn(1 << 20, device="cuda")
    assert torch.equal(model(y), y * 2 + 1)  # the direct path
    assert all(getattr(module, n) is kept[n] for n in states)
    odd = torch.randn((1 << 20) + 1, device="cuda")[1:]  # 4-byte offset: not 16-byte aligned
    assert torch.equal(model(odd), odd * 2 + 1)


def test_triangular_gemm_skips_zero_tiles_on_the_gpu(gpu: Harness, tmp_path: Path) -> None:
    """KernelBench level 1's upper-triangular matmul, as its authors wrote it: the Triton GEMMs skip
    the K loop of the tiles ``triu`` zeroes (a runtime loop bound), and stay exact in fp32."""
    path = problem(tmp_path, "triu", "return torch.triu(torch.matmul(a, b))",
                   "[torch.triu(torch.rand(2048, 2048)), torch.triu(torch.rand(2048, 2048))]", header="# args: a, b")
    skipping = [c for c in design_candidates(path, "default", "cuda") if "zeroed tiles skip" in c.structure]
    assert len(skipping) == 2, [c.structure for c in design_candidates(path, "default", "cuda")]
    _all_accepted(gpu, path, skipping, tmp_path, count_launches=False)


CONVS = {
    "conv2d_relu_bias": ("return torch.relu(self.conv(x)) + self.b", "[torch.randn(16, 64, 66, 65)]",
                         "self.conv = nn.Conv2d(64, 128, 3)\nself.b = nn.Parameter(torch.randn(128, 1, 1))"),
    "conv2d_alone_bf16": ("return self.conv(x)", "[torch.randn(8, 32, 64, 64, dtype=torch.bfloat16)]",
                          "self.conv = nn.Conv2d(32, 64, 3, padding=1).to(torch.bfloat16)"),
    "conv_transpose2d_sigmoid": ("return torch.sigmoid(self.conv(x)) * 2", "[torch.randn(8, 64, 33, 31)]",
                                 "self.conv = nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1)"),
    "conv3d_groupnorm": ("return self.gn(self.conv(x))", "[torch.randn(4, 8, 17, 18, 19)]",
                         "self.conv = nn.Conv3d(8, 16, 3)\nself.gn = nn.GroupNorm(4, 16)"),
    # a pool over the NHWC output, unrolled into the tiled kernel writing NCHW (ir/lower_windows.py)
    "conv2d_tanh_avgpool": ("return F.avg_pool2d(torch.tanh(self.conv(x) - 0.5) - 0.2, 2)", "[torch.randn(8, 64, 66, 65)]",
                            "self.conv = nn.Conv2d(64, 128, 3)"),
    "conv2d_maxpool_padded": ("return F.max_pool2d(self.conv(x), 3, stride=2, padding=1)", "[torch.randn(8, 32, 41, 39)]",
                              "self.conv = nn.Conv2d(32, 64, 3)"),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_channels_last_convolutions_on_the_gpu(name: str, gpu: Harness, tmp_path: Path) -> None:
    """cuDNN's channels-last path really returns the layout the epilogue was rendered for (else the
    layout guard's copy would still be right, but slow): every variant accepted, tiles compiled."""
    body, inputs, init = CONVS[name]
    path = problem(tmp_path, name, body, inputs, init=init)
    cands = design_candidates(path, "default", "cuda")
    assert "conv-channels-last" in [c.variant for c in cands]
    _all_accepted(gpu, path, cands, tmp_path)


REGISTER_CONVS = {
    # level 1 #76's spelling, smaller: the input 3x the output, the rounding pass over it the most traffic
    "conv1d_strided_dilated": ("return self.conv(x)", "[torch.randn(8, 64, 65536)]",
                               "self.conv = nn.Conv1d(64, 128, 3, stride=3, dilation=4, bias=False)"),
    "conv_transpose2d_stride1_fewer_outputs": ("return torch.tanh(self.conv(x))", "[torch.randn(8, 64, 66, 65)]",
                                               "self.conv = nn.ConvTranspose2d(64, 16, 3, padding=1)"),
}


PHASE_CONVS = {
    # level 2 #16's spelling, smaller: one GEMM per output phase, the epilogue writing interleaved outputs
    "conv_transpose2d_stride2_mish": ("return torch.clamp(F.mish(self.conv(x)) + 0.5, -1, 1) * 2",
                                      "[torch.randn(16, 64, 64, 64)]",
                                      "self.conv = nn.ConvTranspose2d(64, 64, 3, stride=2, padding=1, output_padding=1)"),
    # level 2 #26's: 3-D, eight phases of 1-8 taps
    "conv_transpose3d_stride2_hardswish": ("return F.hardswish(self.conv(x) + 1)", "[torch.randn(8, 32, 16, 16, 16)]",
                                           "self.conv = nn.ConvTranspose3d(32, 64, 3, stride=2, padding=1, output_padding=1)"),
    # level 2 #91's: 2H + 1 outputs (phases of 33 and 32 rows), the lanes past the output masked, then a
    # softmax over the channels reading the phase-major buffer
    "conv_transpose2d_stride2_odd_softmax": ("return torch.sigmoid(torch.softmax(self.conv(x), dim=1) * 2.0)",
                                             "[torch.randn(16, 64, 32, 32)]",
                                             "self.conv = nn.ConvTranspose2d(64, 64, 4, stride=2, padding=1, "
                                             "output_padding=1)"),
}


@pytest.mark.parametrize("name", sorted(PHASE_CONVS))
def test_strided_transposed_convolutions_as_phase_gemms_on_the_gpu(name: str, gpu: Harness, tmp_path: Path) -> None:
    """Each output phase's GEMM over its own taps, under the judge's TF32 allowance on the GPU."""
    body, inputs, init = PHASE_CONVS[name]
    path = problem(tmp_path, name, body, inputs, init=init)
    cands = design_candidates(path, "default", "cuda")
    gemm = next(c for c in cands if c.variant == "conv-gemm")
    assert "Triton convolution" in gemm.structure and "aten.convolution" not in gemm.torch_ops
    _all_accepted(gpu, path, cands, tmp_path)


@pytest.mark.parametrize("name", sorted(REGISTER_CONVS))
def test_implicit_gemms_rounding_the_input_in_registers_on_the_gpu(name: str, gpu: Harness, tmp_path: Path) -> None:
    """The swapped implicit GEMM with the gathered input rounded to TF32 in registers meets the
    judge's TF32 allowance (rounded as cuDNN rounds, not truncated), as the in-memory form does."""
    body, inputs, init = REGISTER_CONVS[name]
    path = problem(tmp_path, name, body, inputs, init=init)
    cands = design_candidates(path, "default", "cuda")
    assert {"conv-gemm", "conv-gemm-registers"} <= {c.variant for c in cands}
    _all_accepted(gpu, path, cands, tmp_path)


def test_a_bf16_convolution_under_an_fp32_problem_fails_the_tf32_route(gpu: Harness, tmp_path: Path) -> None:
    """Red team for the fp32 route of TF32 references (egg.evaluate.anchor): the channels-last
    candidate with its convolution run in bf16 (2x the tensor-core rate, ~8x TF32's error) misses
    eager, and the exact fp32 run says it is less accurate than eager's TF32; the honest candidate,
    which misses eager on a few elements too (cuDNN's NHWC algorithm), passes as accurate as eager."""
    body, inputs, init = CONVS["conv2d_relu_bias"]
    path = problem(tmp_path, "conv", body, inputs, init=init)
    honest = offered(path, "conv-channels-last", device="cuda")
    call = next(line for line in honest.source.splitlines() if "aten.convolution.default(" in line)
    target, _, rest = call.partition(" = torch.ops.aten.convolution.default(")
    x, w, others = rest.split(", ", 2)
    sloppy_call = (f"{target} = torch.ops.aten.convolution.default({x}.bfloat16(), {w}.bfloat16(), "
                   f"{others.removesuffix(')')}).float()")
    sloppy = honest.source.replace(call, sloppy_call)
    assert sloppy != honest.source
    verdict = _judge(gpu, path, honest.source, tmp_path / "honest")
    assert verdict.accepted, verdict.reasons  # type: ignore[attr-defined]
    verdict = _judge(gpu, path, sloppy, tmp_path / "sloppy")
    assert not verdict.accepted and verdict.stage_failed == "correctness"  # type: ignore[attr-defined]
    assert "fp32 route" in verdict.reasons[0], verdict.reasons  # type: ignore[attr-defined]


def test_a_bf16_implicit_gemm_convolution_fails_the_tf32_route(gpu: Harness, tmp_path: Path) -> None:
    """Red team for the ``conv-gemm`` variant under the TF32 allowance: its tiles cast to bf16 before
    the dot (2x TF32's tensor-core rate, 8x its rounding) are rejected; the honest TF32 render passes."""
    body, inputs, init = CONVS["conv2d_relu_bias"]
    path = problem(tmp_path, "conv", body, inputs, init=init)
    honest = offered(path, "conv-gemm", device="cuda")
    dot = 'acc = tl.dot(a, b, acc, input_precision="tf32")'
    assert dot in honest.source
    sloppy = honest.source.replace(dot, "acc = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), acc)")
    verdict = _judge(gpu, path, honest.source, tmp_path / "honest")
    assert verdict.accepted, verdict.reasons  # type: ignore[attr-defined]
    # the TF32 rounding passes of the input and the weight (each a transposing store: its own tiled
    # launch since 3792788, no longer one combo launch), the GEMM
    assert launches(verdict) == honest.kernels == 3
    verdict = _judge(gpu, path, sloppy, tmp_path / "sloppy")
    assert not verdict.accepted and verdict.stage_failed == "correctness", verdict.reasons  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["stack", "where_parity", "gptq_int32"])
def test_packed_weights_in_k_phases_on_the_gpu(name: str, gpu: Harness, tmp_path: Path) -> None:
    """The K phases of tests/agents/expert/test_matmul_operands.py compiled by real Triton (tensor-core
    dots of BLOCK_K / p, the packed tile through cp.async) and judged, and plain K beside them."""
    from test_matmul_operands import SPELLINGS, _problem

    init, forward, _, period = SPELLINGS[name]
    path = _problem(tmp_path, name, init, forward)
    phased = design_candidates(path, "default", "cuda")[0]
    assert f"K in {period} phases" in phased.structure
    _all_accepted(gpu, path, [phased, forced(path, device="cuda", K_PHASES=1)], tmp_path)
