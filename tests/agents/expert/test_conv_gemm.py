"""The ``conv-gemm`` variant (agents/expert/ir/lower_conv_gemm.py): a convolution is a Triton implicit
GEMM (weight x the input gathered per tap in the B tile loads) and what follows it is the GEMM's
epilogue. Judged in the interpreter through the real harness on odd shapes, for the spellings of
KernelBench level 1 and 2 and of models (functional calls, ``nn.Conv*``, groups, padding modes that
are index arithmetic, fp16)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from expert_helpers import accepted, forced, launches, offered, problem
from pack_helpers import one_rule_pack

from agents.expert.design import analyse, design_candidates, render
from agents.expert.ir.expr import loads_of
from egg.evaluate.harness import Harness

VARIANT = "conv-gemm"

CONVS: dict[str, tuple[str, str, str, int | None]] = {
    # name: (forward body, inputs, __init__ body, generated launches per call: the
    # fp32 input and weight rounded to TF32 in one combined launch, then the GEMM)
    "conv2d_relu_bias": ("return torch.relu(self.conv(x)) + self.b", "[torch.randn(2, 8, 12, 11)]",
                         "self.conv = nn.Conv2d(8, 6, 3)\nself.b = nn.Parameter(torch.randn(6, 1, 1))", 2),
    "conv2d_alone_strided_grouped_padded": ("return self.conv(x)", "[torch.randn(2, 8, 13, 10)]",
                                            "self.conv = nn.Conv2d(8, 12, 3, stride=2, padding=1, groups=2)", 2),
    "conv2d_dilated_no_bias": ("return self.conv(x)", "[torch.randn(1, 3, 11, 9)]",
                               "self.conv = nn.Conv2d(3, 5, (3, 2), bias=False, dilation=(2, 3), padding=(1, 2))", 2),
    "conv1d_gelu_functional": ("return F.gelu(F.conv1d(x, self.w, self.bias, padding=2))", "[torch.randn(3, 6, 17)]",
                               "self.w = nn.Parameter(torch.randn(10, 6, 5) * 0.1)\n"
                               "self.bias = nn.Parameter(torch.randn(10))", 2),
    "conv3d_sub_scale": ("return (self.conv(x) - 0.5) * 2.0", "[torch.randn(1, 3, 5, 6, 7)]",
                         "self.conv = nn.Conv3d(3, 4, 3)", 2),
    "conv_transpose2d_stride1": ("return torch.tanh(self.conv(x)) * 0.5", "[torch.randn(2, 4, 5, 6)]",
                                 "self.conv = nn.ConvTranspose2d(4, 6, 3, padding=1)", 2),
    "conv_transpose3d_grouped_stride1": ("return F.relu(self.conv(x))", "[torch.randn(1, 4, 4, 5, 3)]",
                                         "self.conv = nn.ConvTranspose3d(4, 6, 3, groups=2, bias=False)", 2),
    # strided transposed convolutions as one GEMM per output phase (sub-pixel), the phases' interleaved
    # outputs written by the epilogue: 2-D with phases of 1, 2 and 4 taps, 3-D, grouped, and alone
    "conv_transpose2d_stride2_mish_clamp": ("return torch.clamp(F.mish(self.conv(x)) + 0.5, -1, 1) * 2",
                                            "[torch.randn(2, 8, 5, 6)]",
                                            "self.conv = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)",
                                            2),
    "conv_transpose3d_stride2_hardswish": ("return F.hardswish(self.conv(x) + 1)", "[torch.randn(1, 4, 3, 4, 2)]",
                                           "self.conv = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, output_padding=1)",
                                           2),
    "conv_transpose2d_stride2_grouped_k4": ("return torch.sigmoid(self.conv(x))", "[torch.randn(2, 8, 5, 5)]",
                                            "self.conv = nn.ConvTranspose2d(8, 12, 4, stride=2, padding=1, groups=2)", 2),
    "conv_transpose2d_stride2_alone": ("return self.conv(x)", "[torch.randn(2, 8, 4, 3)]",
                                       "self.conv = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)", 2),
    # outputs that are not a multiple of the stride: the phases differ in length by one, each computes
    # the longest's positions and the lanes past the output are masked (k=3, s=2, p=1 without
    # output_padding: 2H - 1; level 2 #91's k=4, s=2, p=1, output_padding=1: 2H + 1, then a softmax over
    # the channels reading the phase-major output; #96's 3-D; a mean over positions, never fused into
    # the GEMM: its row would count the padded lanes)
    "conv_transpose2d_stride2_odd_sigmoid": ("return torch.sigmoid(self.conv(x)) * 2 + self.b", "[torch.randn(2, 8, 5, 4)]",
                                             "self.conv = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1)\n"
                                             "self.b = nn.Parameter(torch.randn(6, 1, 1))", 2),
    "conv_transpose2d_stride2_k4_softmax": ("return torch.sigmoid(torch.softmax(self.conv(x), dim=1) * 2)",
                                            "[torch.randn(2, 8, 5, 6)]",
                                            "self.conv = nn.ConvTranspose2d(8, 6, 4, stride=2, padding=1, output_padding=1)",
                                            None),
    "conv_transpose3d_stride2_odd_hardswish": ("return F.hardswish(self.conv(x) * 0.5)", "[torch.randn(1, 4, 3, 4, 2)]",
                                               "self.conv = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1)", 2),
    # stride 2, no padding, output 19: phases of 10 and 9 outputs (until 2026-12-06 left to cuDNN)
    "conv_transpose2d_stride2_unpadded_relu": ("return torch.relu(self.conv(x))", "[torch.randn(2, 6, 9, 9)]",
                                               "self.conv = nn.ConvTranspose2d(6, 4, 3, stride=2)", 2),
    "conv_transpose2d_stride2_odd_mean": ("return self.conv(x).mean(dim=(2, 3))", "[torch.randn(2, 8, 4, 5)]",
                                          "self.conv = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1)", None),
    # the output read by a reduction (GroupNorm's statistics): the convolution's output is stored once
    "conv2d_sigmoid_groupnorm": ("return self.gn(torch.sigmoid(self.conv(x)))", "[torch.randn(2, 3, 10, 9)]",
                                 "self.conv = nn.Conv2d(3, 8, 3)\nself.gn = nn.GroupNorm(4, 8)", None),
    # an input the module made channels-last itself: the gather reads it through its strides
    "conv2d_user_channels_last": ("x = x.contiguous(memory_format=torch.channels_last)\nreturn F.silu(self.conv(x)) * 2",
                                  "[torch.randn(2, 8, 10, 9)]", "self.conv = nn.Conv2d(8, 6, 3, padding=1)", None),
    # two convolutions in a row (a ResNet block's spelling): the second gathers the first's output,
    # which the first GEMM's epilogue stores rounded (the input and both weights: one launch)
    "two_convs_residual": ("y = F.relu(self.c1(x))\nreturn F.relu(self.c2(y) + x)", "[torch.randn(2, 6, 7, 8)]",
                           "self.c1 = nn.Conv2d(6, 6, 3, padding=1)\nself.c2 = nn.Conv2d(6, 6, 3, padding=1)", 3),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_implicit_gemm_convolution_is_accepted(name: str, harness: Harness, tmp_path: Path) -> None:
    body, inputs, init, planned = CONVS[name]
    path = problem(tmp_path, name, body, inputs, init=init)
    cand = offered(path, VARIANT)
    verdict = accepted(harness, path, cand.source, "default", tmp_path / "judged")
    assert launches(verdict) == cand.kernels
    if planned is not None:
        assert cand.kernels == planned, cand.structure
    assert "aten.convolution" not in cand.torch_ops, cand.torch_ops
    assert "Triton convolution" in cand.structure, cand.structure
    assert "tl.dot(" in cand.source


CORPUS = Path(__file__).resolve().parents[2] / "frontend" / "corpus" / "conv_epilogue"
# the formulation corpus's convolutions (tests/frontend/test_corpus.py judges their default candidate):
# launches of the implicit-GEMM candidate - the TF32 rounding pass, then one GEMM per convolution, whose
# epilogue carries the norm, the activation, the residual and the next convolution's input rounding
CORPUS_LAUNCHES = {"kernelbench_relu_bias": 2, "timm_conv_norm_act": 2, "functional_conv1d_gelu": 2,
                   "resnet_basic_block": 3}


@pytest.mark.parametrize("name", sorted(CORPUS_LAUNCHES))
def test_the_corpus_convolutions_as_implicit_gemms(name: str, harness: Harness, tmp_path: Path) -> None:
    path = CORPUS / f"{name}.py"
    cand = offered(path, VARIANT, "small")
    verdict = accepted(harness, path, cand.source, "small", tmp_path / "judged")
    assert launches(verdict) == cand.kernels == CORPUS_LAUNCHES[name], cand.structure
    assert cand.torch_ops == [], cand.torch_ops


def test_the_epilogue_runs_on_the_gemm_tile_and_the_output_is_written_once(tmp_path: Path) -> None:
    """conv + ReLU + bias: the GEMM stores only the final value, in NCHW (positions along the tile's
    N axis, stride 1), with TF32 dots for an fp32 problem (cuDNN's default precision)."""
    body, inputs, init, _ = CONVS["conv2d_relu_bias"]
    path = problem(tmp_path, "conv", body, inputs, init=init)
    cand = offered(path, VARIANT)
    kernel = next(k for k in cand.source.split("@triton.jit") if "tl.dot(" in k)
    assert kernel.count("tl.store(") == 1
    assert 'input_precision="tf32"' in kernel
    # the GPU render rounds the input and the weight to TF32 once, in memory (the tensor cores would
    # truncate them); the CPU render leaves them exact (the interpreter's dot is exact fp32)
    gpu = render(analyse(path), analyse(path).variant(VARIANT), "cuda").source
    kernel = next(k for k in gpu.split("@triton.jit") if "tl.dot(" in k)
    assert "_egg_round_tf32" not in kernel
    assert len(re.findall(r"= _egg_round_tf32\(", gpu)) == 2, gpu  # the input's pass and the weight's
    assert not re.findall(r"= _egg_round_tf32\(", cand.source)
    # NCHW: the position (the column's digit within its image) at stride 1, the image at C x H x W
    # (the 2 images' 90 positions fill 2 of 128 columns folded, where each image alone padded to 128)
    assert re.search(r"tl\.store\(add_ptr \+ \(90\*rm \+ e_i\d+ \+ 540\*e_i\d+\)", kernel), kernel
    assert "algorithm-structure/fuse-matmul-epilogue" in cand.principle_ids


def test_fp16_convolution_dots_in_fp16(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "conv16", "return F.hardswish(self.conv(x))", "[torch.randn(2, 8, 9, 10).half()]",
                   init="self.conv = nn.Conv2d(8, 16, 3, padding=1).half()")
    cand = offered(path, VARIANT)
    kernel = next(k for k in cand.source.split("@triton.jit") if "tl.dot(" in k)
    assert "input_precision" not in kernel and "_egg_round_tf32" not in kernel
    verdict = accepted(harness, path, cand.source, "default", tmp_path / "judged")
    assert launches(verdict) == cand.kernels == 1


@pytest.mark.parametrize("name", ["conv2d_alone_strided_grouped_padded", "conv3d_sub_scale"])
def test_the_gpu_tiles_are_right_on_ragged_edges(name: str, harness: Harness, tmp_path: Path) -> None:
    """Tiles that divide none of M, N, K (masked rows, positions and taps), in the interpreter."""
    body, inputs, init, _ = CONVS[name]
    path = problem(tmp_path, name, body, inputs, init=init)
    index = [v.id for v in analyse(path).variants].index(VARIANT)
    cand = forced(path, variant=index, BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)
    assert {k.config["BLOCK_N"] for k in cand.config.kernels if k.template == "matmul"} == {32}
    verdict = accepted(harness, path, cand.source, "default", tmp_path / "judged")
    assert launches(verdict) == cand.kernels


INF_INPUT = "def _inf():\n    x = torch.randn(2, 8, 5, 6)\n    x[0, 3, 2, 1] = float('inf')\n    x[1, 5, 4, 5] = float('-inf')\n    return x\n"


def test_phases_never_read_the_input_through_a_slot_past_the_kernel(harness: Harness, tmp_path: Path) -> None:
    """A phase with fewer taps has slots past the kernel (weight 0). Reading the input there anyway
    and multiplying by 0 turns an infinite input into NaN at outputs the reference computes finite;
    the slots' reads are masked off, so those outputs stay as torch has them."""
    body, _, init, _ = CONVS["conv_transpose2d_stride2_mish_clamp"]
    path = problem(tmp_path, "inf", "return self.conv(x)", "[_inf()]", init=init, header=INF_INPUT)
    cand = offered(path, VARIANT)
    assert "Triton convolution" in cand.structure
    accepted(harness, path, cand.source, "default", tmp_path / "judged")


def test_phases_sharing_an_output_row_are_one_programs_and_stored_contiguously(tmp_path: Path) -> None:
    """One phase a program stored every second element (level 2 #16 on an H100: 9.7 of 10.1 ms bound
    by L2 on those stores, ncu, 2026-12-06). The last dim's phases are now one program's
    accumulators, joined in registers: the store walks the output row at stride 1."""
    body, inputs, init, _ = CONVS["conv_transpose2d_stride2_mish_clamp"]  # output [2, 6, 10, 12]
    path = problem(tmp_path, "phases", body, inputs, init=init)
    program = analyse(path)
    cand = render(program, program.variant(VARIANT), "cuda")
    kernel = next(k for k in cand.source.split("@triton.jit") if "tl.dot(" in k)
    assert "acc = tl.reshape(tl.join(acc0, acc1), (BLOCK_M, BLOCK_N))" in kernel
    assert "2 output phases interleaved in registers" in cand.structure, cand.structure
    column = re.search(r"(e_i\d+) = \(rn\) % 12\n", kernel)  # the output column: the tile's own column
    store = next(line for line in kernel.splitlines() if "tl.store(" in line)
    assert column and re.search(rf"(?<![*\w]){column.group(1)}(?!\d)", store), store
    assert not re.search(r"(?<!\d)2\*e_i", store), store  # (the old render: the column at stride 2)


def test_interleaved_phase_gemms_take_the_packs_stages_unless_a_move_sets_them(tmp_path: Path) -> None:
    """Each phase's A tile sits in every pipeline stage: on an H100 #16's phase GEMM ran 4.76 ms at
    3 stages (2 blocks an SM by shared memory) and 3.12 ms at 2 (2026-12-06). The stages are the
    tiling pack's constant, which a user pack changes; a tuning move's own stages stand."""
    from agents.expert.target import target_from
    from agents.expert.choices import decisions_for
    from egg.device import default_facts
    from principles import load_packs

    body, inputs, init, _ = CONVS["conv_transpose2d_stride2_mish_clamp"]
    path = problem(tmp_path, "phases", body, inputs, init=init)
    program = analyse(path)
    variant = program.variant(VARIANT)

    def stages(device: object, **moves: int) -> tuple[int, list[str]]:
        cand = render(program, variant, device, {k.name: moves for k in variant.program.kernels if k.kind == "matmul"})
        cfg = next(k.config for k in cand.config.kernels if k.template == "matmul")
        return cfg["num_stages"], cand.principle_ids

    n, pids = stages("cuda")
    assert n == 2 and "tiling/num-stages-pipelining" in pids
    assert stages("cuda", num_stages=4)[0] == 4
    body2, inputs2, init2, _ = CONVS["conv2d_relu_bias"]
    other = analyse(problem(tmp_path, "plain", body2, inputs2, init=init2))
    plain = render(other, other.variant(VARIANT), "cuda")
    assert next(k.config for k in plain.config.kernels if k.template == "matmul")["num_stages"] == 3  # no phases
    root = one_rule_pack(tmp_path, "house/three-stages", ["conv"], {"constants": {"tiling/output-phase-gemm-stages": 3}})
    decisions = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    n, pids = stages(target_from("cuda", decisions))
    assert n == 3 and "house/three-stages" in pids


@pytest.mark.parametrize("name,init,inputs", [
    # 4 phases a row (nested joins), columns masked: N = 3 x 20 = 60 of BLOCK_N 32 per program
    ("stride4", "self.conv = nn.ConvTranspose2d(16, 4, 4, stride=4)", "[torch.randn(2, 16, 3, 5)]"),
    # 3 phases: no power of two to join, so they stay batch dims of the launch (stores 3 apart)
    ("stride3_1d", "self.conv = nn.ConvTranspose1d(16, 5, 5, stride=3, padding=1)", "[torch.randn(2, 16, 7)]"),
    # stride 2 along W only: the rows' single phase, the columns' two interleaved
    ("stride_1x2", "self.conv = nn.ConvTranspose2d(8, 4, 3, stride=(1, 2), padding=1, output_padding=(0, 1))",
     "[torch.randn(2, 8, 5, 7)]"),
])
def test_interleaved_phases_are_right_on_ragged_tiles(name: str, init: str, inputs: str, harness: Harness,
                                                      tmp_path: Path) -> None:
    path = problem(tmp_path, name, "return torch.tanh(self.conv(x)) - 0.25", inputs, init=init)
    index = [v.id for v in analyse(path).variants].index(VARIANT)
    cand = forced(path, variant=index, BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)
    joins = {"stride4": 3, "stride3_1d": 0, "stride_1x2": 1}[name]
    assert cand.source.count("tl.join(") == joins, cand.structure
    verdict = accepted(harness, path, cand.source, "default", tmp_path / "judged")
    assert launches(verdict) == cand.kernels


def test_phase_gemms_are_offered_after_cudnns_plans(tmp_path: Path) -> None:
    """Measured slower than cuDNN and its fused epilogue on the H100 (level 2 #16, #26, #36, at
    95eb3a4; since then back to back: #26 faster, #16 even, #36 slower): until a judged sweep ranks
    them, a short K does not put them first as it does an ordinary convolution's GEMM."""
    from agents.expert.choices import decisions_for
    from egg.device import default_facts
    from principles import load_packs

    builtin = load_packs([], entry_points=False)

    def order(name: str) -> list[str]:
        body, inputs, init, _ = CONVS[name]
        path = problem(tmp_path, name, body, inputs, init=init)
        return [c.variant for c in design_candidates(path, decisions=decisions_for(path, builtin, default_facts()))]

    phases = order("conv_transpose2d_stride2_mish_clamp")  # K = 8 x 4 slots
    assert VARIANT in phases and phases.index(VARIANT) > phases.index("fused"), phases
    assert order("conv2d_relu_bias")[0] == VARIANT  # K = 72: the GEMM first


def test_gpu_render_takes_tensor_core_tiles(tmp_path: Path) -> None:
    body, inputs, init, _ = CONVS["conv2d_relu_bias"]
    path = problem(tmp_path, "conv", body, inputs, init=init)
    program = analyse(path)
    cand = render(program, program.variant(VARIANT), "cuda")
    cfg = next(k.config for k in cand.config.kernels if k.template == "matmul")
    assert cfg["BLOCK_K"] >= 16 and cfg["BLOCK_M"] >= 16 and cfg["SPLIT_K"] == 1, cfg


@pytest.mark.parametrize("init", [
    "self.conv = nn.Conv2d(6, 6, 3, groups=6)",  # depthwise: K = 9 taps
    "self.conv = nn.Conv2d(6, 6, (3, 7), groups=6)",  # depthwise at K = 21 (level 1 #85): one GEMM row a group
])
def test_depthwise_convolutions_are_no_implicit_gemms(init: str, tmp_path: Path) -> None:
    """They are stencils (test_conv_depthwise.py): no conv-gemm variant of their own."""
    path = problem(tmp_path, "c", "return torch.relu(self.conv(x))", "[torch.randn(2, 6, 9, 9)]", init=init)
    variants = [v.id for v in analyse(path).variants]
    assert VARIANT not in variants and "conv-depthwise" in variants, variants


def test_red_team_a_half_precision_dot_is_rejected_where_no_tf32_is_allowed(harness: Harness, tmp_path: Path) -> None:
    """The candidate an agent under reward pressure writes: the same implicit GEMM with its operands
    cast to fp16 (2x the tensor-core rate of TF32). On the CPU the reference is plain fp32 (no TF32
    allowance), so the rounding shows; the honest render passes the same judge."""
    body, inputs, init, _ = CONVS["conv2d_relu_bias"]
    path = problem(tmp_path, "conv", body, inputs, init=init)
    honest = offered(path, VARIANT)
    sloppy = honest.source.replace('acc = tl.dot(a, b, acc, input_precision="tf32")',
                                   "acc = tl.dot(a.to(tl.float16), b.to(tl.float16), acc)")
    assert sloppy.count("tl.float16") == 2, "the red-team edit no longer applies to the rendered kernel"
    accepted(harness, path, honest.source, "default", tmp_path / "honest")
    from expert_helpers import judge

    verdict = judge(harness, path, sloppy, "default", tmp_path / "sloppy")
    assert not verdict.accepted and verdict.stage_failed == "correctness", (verdict.stage_failed, verdict.reasons)


def test_tf32_rounding_is_cudnns_and_the_judges(tmp_path: Path) -> None:
    """The GPU render rounds fp32 operands to TF32 (to nearest, ties away) before the dot: the
    helper, run in the interpreter, equals the judge's TF32 emulation bit for bit, ties, signs,
    subnormals, infinities and values that round up to the next binade included."""
    import importlib.util

    import torch

    from agents.expert.helpers import helper_source
    from egg.evaluate.anchor import tf32_round

    module = tmp_path / "round_tf32.py"
    module.write_text("import triton\nimport triton.language as tl\n\n" + helper_source("_egg_round_tf32(x)") + """


@triton.jit
def _kernel(x_ptr, y_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(y_ptr + i, _egg_round_tf32(tl.load(x_ptr + i)))
""")
    spec = importlib.util.spec_from_file_location("round_tf32", module)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    special = torch.tensor([1.0 + 2.0 ** -11, -(1.0 + 2.0 ** -11), 1.0 + 2.0 ** -12, 2.0 - 2.0 ** -23, 1e-40, -0.0,
                            float("inf"), float("-inf"), 3.4e38])
    x = torch.cat([special, torch.randn(1024 - special.numel()) * 100])
    y = torch.empty_like(x)
    mod._kernel[(1,)](x, y, N=1024)
    assert torch.equal(y.view(torch.int32), tf32_round(x).view(torch.int32))
    assert y[0] == 1.0 + 2.0 ** -10 and y[2] == 1.0  # a tie rounds away from zero, below one rounds down


def test_long_convolution_reductions_put_cudnns_plans_first_and_a_pack_moves_the_line(tmp_path: Path) -> None:
    """The implicit GEMM goes first for short reductions (K = Cin x taps = 72 here) and last for
    long ones (576, where cuDNN was 2.1x faster on the H200), its register-rounding form too (offered
    here: the input is large next to the output); the constant is a pack's to change."""
    from agents.expert.choices import decisions_for
    from egg.device import default_facts
    from principles import load_packs

    short = problem(tmp_path, "short", "return F.leaky_relu(self.conv(x) / 2)", "[torch.randn(2, 8, 12, 12)]",
                    init="self.conv = nn.Conv2d(8, 16, 3)")
    long = problem(tmp_path, "long", "return F.leaky_relu(self.conv(x) / 2)", "[torch.randn(2, 64, 12, 12)]",
                   init="self.conv = nn.Conv2d(64, 16, 3)")
    builtin = load_packs([], entry_points=False)
    order = {p.stem: [c.variant for c in design_candidates(p, decisions=decisions_for(p, builtin, default_facts()))]
             for p in (short, long)}
    assert order["short"][0] == VARIANT and set(order["long"][-2:]) == {VARIANT, REGISTERS}, order
    root = one_rule_pack(tmp_path, "long-k/gemm-first", ["conv"],
                         {"constants": {"algorithm-structure/conv-gemm-first-max-k": 1024}})
    decisions = decisions_for(long, load_packs([root], entry_points=False), default_facts())
    cands = design_candidates(long, decisions=decisions)
    assert cands[0].variant == VARIANT
    assert "long-k/gemm-first" in cands[0].principle_ids


@pytest.mark.parametrize(("name", "channels_last"), [
    ("conv2d_relu_bias", True),  # Cin 8: runs of 8 channels, 32 bytes
    ("conv_transpose3d_grouped_stride1", False),  # Cin/groups 2: runs of 8 bytes, NCHW gather kept
    ("conv1d_gelu_functional", False),  # Cin 6
])
def test_tf32_implicit_gemms_gather_channels_last_where_channel_runs_align(name: str, channels_last: bool,
                                                                           tmp_path: Path) -> None:
    """Hopper's tensor cores read 32-bit operands K-major only, and a gathered NCHW input is N-major:
    the TF32 rounding pass writes the input channels-last and the weight channels-innermost, and K
    runs over (tap, channel) with the channel fastest, where Cin/groups is a multiple of 4. The
    candidates themselves are judged in ``test_implicit_gemm_convolution_is_accepted``."""
    from agents.expert.ir.nodes import MatmulNode, PointwiseNode

    body, inputs, init, _ = CONVS[name]
    path = problem(tmp_path, name, body, inputs, init=init)
    variant = analyse(path, "default").variant(VARIANT)
    nodes = variant.program.graph.nodes.values()
    (x_round,) = [n for n in nodes if isinstance(n, PointwiseNode) and n.name.endswith("_x_tf32")]
    (gemm,) = [n for n in nodes if isinstance(n, MatmulNode)]
    assert (x_round.layout.stride[1] == 1) is channels_last, x_round.layout
    # B's loads walk memory along K in runs of whole 16-byte groups exactly when the input is
    # channels-last (from NCHW memory only a tap row's taps are adjacent: runs of 3 or 5 here)
    assert (_k_run(gemm) % 4 == 0) is channels_last, gemm.b
    if channels_last:  # and A, the weight, is K-contiguous end to end
        (a_load,) = loads_of(gemm.a)
        assert dict(a_load.index.terms).get(gemm.kvar) == 1, gemm.a


def _k_run(gemm) -> int:
    """How many consecutive K indices B's load reads from consecutive addresses."""
    from agents.expert.ir.index import Affine, DivMod

    (load,) = loads_of(gemm.b)
    for term, coeff in load.index.terms:
        if term == gemm.kvar and coeff == 1:
            return gemm.k
        if isinstance(term, DivMod) and term.base == Affine.of(gemm.kvar) and term.div == 1 and coeff == 1:
            return term.mod or gemm.k
    return 1


def test_a_large_input_copy_read_across_channels_keeps_a_tiled_launch(tmp_path: Path) -> None:
    """The TF32 rounding pass writes the input channels-last; as a flat part of a combo kernel its
    lanes read NCHW memory H*W elements apart, each 4-byte load in a sector of its own (KernelBench
    level 1 #56: 0 vector loads for sm_90a). A large copy keeps its own launch, which the pointwise
    template tiles; the small weight copy may still share a launch (schedule._combine)."""
    path = problem(tmp_path, "big", "return self.conv(x)", "[torch.randn(4, 64, 64, 64)]",
                   init="self.conv = nn.Conv2d(64, 64, 3)")
    program = analyse(path)
    cand = render(program, program.variant("conv-gemm"), "cuda")
    copies = [k for k in cand.config.kernels if k.template == "pointwise"]
    big = next(k for k in copies if "_x_tf" in k.kernel)
    assert "com" not in big.kernel and big.config.get("YBLOCK", 1) > 1, cand.config.kernels
    # a small input's copy still joins the weight's in one launch
    small = problem(tmp_path, "small", "return self.conv(x)", "[torch.randn(1, 16, 20, 20)]",
                    init="self.conv = nn.Conv2d(16, 32, 3)")
    program = analyse(small)
    kinds = [k.kernel for k in render(program, program.variant("conv-gemm"), "cuda").config.kernels]
    assert any("com" in name for name in kinds), kinds



REGISTERS = "conv-gemm-registers"
# convolutions whose input is large next to their output (the rounding pass over the input would be
# at least their own traffic): the swapped GEMM rounds the gathered input in registers
ROUNDED_IN_REGISTERS: dict[str, tuple[str, str, str]] = {
    "conv1d_strided_dilated": ("return self.conv(x)", "[torch.randn(2, 8, 61)]",
                               "self.conv = nn.Conv1d(8, 8, 3, stride=3, dilation=4, bias=False)"),
    "conv_transpose2d_stride1_fewer_outputs": ("return torch.tanh(self.conv(x))", "[torch.randn(2, 8, 7, 6)]",
                                               "self.conv = nn.ConvTranspose2d(8, 4, 3, padding=1)"),
    "conv2d_grouped_strided_relu": ("return F.relu(self.conv(x)) * 2", "[torch.randn(2, 8, 11, 10)]",
                                    "self.conv = nn.Conv2d(8, 4, 3, stride=2, groups=2)"),
}


@pytest.mark.parametrize("name", sorted(ROUNDED_IN_REGISTERS))
def test_a_large_input_is_rounded_in_registers_not_in_a_pass(name: str, harness: Harness, tmp_path: Path) -> None:
    """No rounding pass over the input: the weight's rounding and the GEMM (two launches), the GEMM
    computed transposed with the gathered input as the dot's first (register) operand, rounded there
    on the GPU; judged in the interpreter on its default and on ragged tiles."""
    body, inputs, init = ROUNDED_IN_REGISTERS[name]
    path = problem(tmp_path, name, body, inputs, init=init)
    cand = offered(path, REGISTERS)
    assert "_x_tf32" not in cand.source and "_w_tf32" in cand.source
    verdict = accepted(harness, path, cand.source, "default", tmp_path / "judged")
    assert launches(verdict) == cand.kernels == 2, cand.structure
    program = analyse(path)
    gpu = render(program, program.variant(REGISTERS), "cuda").source
    gemm = next(k for k in gpu.split("@triton.jit") if "tl.dot(" in k)
    operand_b = [line for line in gemm.splitlines() if "b_" in line and "_egg_round_tf32(" in line]
    assert operand_b and "acc_t = tl.dot(b, a, acc_t" in gemm and 'input_precision="tf32"' in gemm, gemm
    index = [v.id for v in program.variants].index(REGISTERS)
    ragged = forced(path, variant=index, BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)
    accepted(harness, path, ragged.source, "default", tmp_path / "ragged")


def test_an_input_small_next_to_its_output_keeps_the_rounding_pass(tmp_path: Path) -> None:
    """Level 2 #71's proportions (8 channels in, 64 out: the pass is a fifth of the traffic; level 2
    #1's 0.67 too): the in-memory rounding, with its K-major gather, is the only implicit GEMM offered."""
    path = problem(tmp_path, "wide", "return F.leaky_relu(self.conv(x) / 2)", "[torch.randn(2, 4, 10, 10)]",
                   init="self.conv = nn.Conv2d(4, 32, 3)")
    variants = [c.variant for c in design_candidates(path)]
    assert VARIANT in variants and REGISTERS not in variants, variants
