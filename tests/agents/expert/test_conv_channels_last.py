"""The ``conv-channels-last`` variant (agents/expert/ir/lower_conv.py): convolutions run bias-free on
channels-last tensors, a generated kernel transposes the input, and the bias plus everything after
the convolution is one tiled kernel writing the reference's layout. Judged on odd shapes in the
interpreter, through the real harness, for the convolution families of KernelBench level 1 and 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from expert_helpers import accepted, forced, launches, offered, problem
from pack_helpers import one_rule_pack

from agents.expert.design import analyse, design_candidates, render
from egg.evaluate.harness import Harness

VARIANT = "conv-channels-last"

CONVS: dict[str, tuple[str, str, str, int]] = {
    # name: (forward body, inputs, __init__ body, generated launches per call)
    "conv2d_relu_bias": ("return torch.relu(self.conv(x)) + self.b", "[torch.randn(2, 8, 12, 11)]",
                         "self.conv = nn.Conv2d(8, 6, 3)\nself.b = nn.Parameter(torch.randn(6, 1, 1))", 2),
    # conv alone (KernelBench level 1): the NCHW plan has no kernel to offer and declines; this one has two
    "conv2d_alone_strided_grouped": ("return self.conv(x)", "[torch.randn(2, 4, 13, 10)]",
                                     "self.conv = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2)", 2),
    "conv2d_alone_no_bias": ("return self.conv(x)", "[torch.randn(1, 3, 9, 9)]",
                             "self.conv = nn.Conv2d(3, 5, 2, bias=False, dilation=2)", 2),
    "conv_transpose2d_tanh_scale": ("return torch.tanh(self.conv(x)) * 0.5", "[torch.randn(2, 4, 5, 6)]",
                                    "self.conv = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)", 2),
    "conv3d_sub_scale": ("return (self.conv(x) - 0.5) * 2.0", "[torch.randn(1, 3, 5, 6, 7)]",
                         "self.conv = nn.Conv3d(3, 4, 3)", 2),
    # a module that already works channels-last (its own .contiguous(memory_format=...)): the copy it
    # asks for is the transpose kernel, nothing is transposed twice
    "conv2d_user_channels_last": ("x = x.contiguous(memory_format=torch.channels_last)\nreturn F.silu(self.conv(x)) * 2",
                                  "[torch.randn(2, 8, 10, 9)]",
                                  "self.conv = nn.Conv2d(8, 6, 3, padding=1).to(memory_format=torch.channels_last)", 2),
    # a reduction over the channels-last output: GroupNorm's statistics read it through its strides
    "conv2d_sigmoid_groupnorm": ("return self.gn(torch.sigmoid(self.conv(x)))", "[torch.randn(2, 3, 10, 9)]",
                                 "self.conv = nn.Conv2d(3, 8, 3)\nself.gn = nn.GroupNorm(4, 8)", None),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_channels_last_convolution_is_accepted(name: str, harness: Harness, tmp_path: Path) -> None:
    body, inputs, init, planned = CONVS[name]
    path = problem(tmp_path, name, body, inputs, init=init)
    cand = offered(path, VARIANT)
    verdict = accepted(harness, path, cand.source, "default", tmp_path / "judged")
    assert launches(verdict) == cand.kernels
    if planned is not None:
        assert cand.kernels == planned, cand.structure
    assert cand.torch_ops == ["aten.convolution"]
    call = next(line for line in cand.source.splitlines() if "aten.convolution.default(" in line)
    assert "_nhwc, " in call and ", None, " in call, call  # the transposed input, the bias left out
    assert "algorithm-structure/conv-channels-last" in cand.principle_ids


@pytest.mark.parametrize("name", ["conv2d_relu_bias", "conv_transpose2d_tanh_scale", "conv3d_sub_scale"])
def test_tiled_transposes_are_right_on_ragged_tiles(name: str, harness: Harness, tmp_path: Path) -> None:
    """The GPU's tiled kernels, forced on the CPU with tiles that divide neither side of the transpose."""
    body, inputs, init, _ = CONVS[name]
    path = problem(tmp_path, name, body, inputs, init=init)
    index = [v.id for v in analyse(path).variants].index(VARIANT)
    cand = forced(path, variant=index, XBLOCK=16, YBLOCK=8)
    tiled = [k for k in cand.config.kernels if k.config.get("YBLOCK") == 8]
    assert len(tiled) == 2, cand.config.kernels  # the input transpose and the epilogue
    assert cand.source.count("YBLOCK: tl.constexpr") == 2
    verdict = accepted(harness, path, cand.source, "default", tmp_path / "judged")
    assert launches(verdict) == cand.kernels


def test_gpu_render_tiles_both_sides_of_the_transpose(tmp_path: Path) -> None:
    body, inputs, init, _ = CONVS["conv2d_relu_bias"]
    path = problem(tmp_path, "conv", body, inputs, init=init)
    program = analyse(path)
    cand = render(program, program.variant(VARIANT), "cuda")
    by_kernel = {k.kernel: k.config for k in cand.config.kernels}
    assert all(cfg.get("YBLOCK", 1) > 1 for cfg in by_kernel.values()), by_kernel
    epilogue = next(k for k in cand.source.split("@triton.jit") if "tl.store(add_ptr" in k).split("\n\n\n")[0]
    # the NHWC load walks yindex (channels) with stride 1; the NCHW store walks xinner
    assert "tl.load(convolution_ptr + (6*xinner" in epilogue, epilogue
    assert "tl.store(add_ptr + (xinner + 90*yindex)" in epilogue, epilogue


def test_a_lone_convolution_gets_the_channels_last_and_implicit_gemm_candidates(tmp_path: Path) -> None:
    """NCHW, a lone convolution has nothing around it to fuse (the ``fused`` plan has no kernel)."""
    path = problem(tmp_path, "conv_alone", "return self.conv(x)", "[torch.randn(2, 4, 9, 9)]",
                   init="self.conv = nn.Conv2d(4, 8, 3)")
    assert [v.id for v in analyse(path).variants] == [VARIANT, "conv-gemm"]


def test_a_depthwise_convolution_stays_nchw(tmp_path: Path) -> None:
    """cuDNN's NHWC depthwise kernel was 6x slower than its NCHW one on the H200 (KernelBench L1 #85):
    no channels-last plan for a depthwise convolution (its one plan is the stencil, conv-depthwise)."""
    path = problem(tmp_path, "depthwise", "return self.conv(x)", "[torch.randn(2, 6, 9, 9)]",
                   init="self.conv = nn.Conv2d(6, 6, 3, groups=6)")
    assert [v.id for v in analyse(path).variants] == ["conv-depthwise"]
    grouped = problem(tmp_path, "grouped", "return self.conv(x)", "[torch.randn(2, 6, 9, 9)]",
                      init="self.conv = nn.Conv2d(6, 6, 3, groups=3)")
    assert [v.id for v in analyse(grouped).variants] == [VARIANT, "conv-gemm"]


def test_a_pack_switches_the_variant_off(tmp_path: Path) -> None:
    from agents.expert.choices import decisions_for
    from egg.device import default_facts
    from principles import load_packs

    root = one_rule_pack(tmp_path, "keep-nchw/no-layout-change", ["conv"], {"variants": {VARIANT: {"enabled": False}}})
    body, inputs, init, _ = CONVS["conv2d_relu_bias"]
    path = problem(tmp_path, "conv", body, inputs, init=init)
    # (8 channels in, 6 out: the input's rounding pass would outweigh the convolution's own traffic,
    # so the implicit GEMM that rounds in registers is offered too)
    assert [c.variant for c in design_candidates(path)] == ["fused", VARIANT, "conv-gemm", "conv-gemm-registers"]
    decisions = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    assert [c.variant for c in design_candidates(path, decisions=decisions)] == ["conv-gemm", "conv-gemm-registers",
                                                                                 "fused"]


@pytest.mark.parametrize("config", [{}, {"PERSISTENT": False, "RBLOCK": 16, "XBLOCK": 2}])
def test_a_reduction_over_the_channels_last_output_walks_it_in_memory_order(config: dict, harness: Harness,
                                                                            tmp_path: Path) -> None:
    """GroupNorm's statistics over an NHWC output: rindex walks (h, w, channel in group), so the
    channel digit (stride 1 in memory) is the fastest; persistent and looped (two passes, the second
    storing every element through the same map), judged against eager."""
    body, inputs, init, _ = CONVS["conv2d_sigmoid_groupnorm"]
    path = problem(tmp_path, "gn", body, inputs, init=init)
    index = [v.id for v in analyse(path).variants].index(VARIANT)
    cand = forced(path, variant=index, **config)
    assert "reduced elements walked in memory order" in cand.structure, cand.structure
    assert ("looped" in cand.structure) == bool(config)
    verdict = accepted(harness, path, cand.source, "default", tmp_path / "judged")
    assert launches(verdict) == cand.kernels


def test_the_builtin_packs_put_the_measured_winners_first(tmp_path: Path) -> None:
    """A budget of one candidate evaluates only the first structure: the built-in packs put the
    implicit GEMM, then the channels-last plan before NCHW, and the FMA matrix-vector product before the padded dots (their
    principles cite the H200 runs), naming the principle that moved each."""
    from agents.expert.choices import decisions_for
    from egg.device import default_facts
    from principles import load_packs

    builtin = load_packs([], entry_points=False)
    body, inputs, init, _ = CONVS["conv2d_relu_bias"]
    conv = problem(tmp_path, "conv", body, inputs, init=init)
    cands = design_candidates(conv, decisions=decisions_for(conv, builtin, default_facts()))
    assert [c.variant for c in cands] == ["conv-gemm", VARIANT, "conv-gemm-registers", "fused"]
    assert "algorithm-structure/conv-implicit-gemm" in cands[0].principle_ids
    assert "algorithm-structure/conv-channels-last" in cands[1].principle_ids
    # KernelBench #4 is memory-bound (the principle is for that bottleneck): a tall matrix here too
    mv = problem(tmp_path, "mv", "return torch.matmul(a, b)", "[torch.randn(2048, 4096), torch.randn(4096, 1)]",
                 header="# args: a, b")
    cands = design_candidates(mv, decisions=decisions_for(mv, builtin, default_facts()))
    assert [c.variant for c in cands][:1] == ["triton-matmul-fma"]
    assert "algorithm-structure/matvec-as-fma" in cands[0].principle_ids
    # an ordinary GEMM keeps the packs' ieee-first order
    gemm = problem(tmp_path, "gemm", "return torch.matmul(a, b)", "[torch.randn(9, 32), torch.randn(32, 12)]",
                   header="# args: a, b")
    assert [c.variant for c in design_candidates(gemm, decisions=decisions_for(gemm, builtin, default_facts()))][:1] \
        == ["triton-matmul-ieee"]


POOLS: dict[str, tuple[str, str, str]] = {
    # KernelBench level 2 #46's shape of plan: a pointwise chain, then a 2 x 2 average pool
    "conv2d_tanh_avgpool": ("return F.avg_pool2d(torch.tanh(self.conv(x) - 0.5) - 0.2, 2)", "[torch.randn(2, 8, 11, 12)]",
                            "self.conv = nn.Conv2d(8, 6, 3)"),
    # a padded, strided max pool whose windows are clipped, and NaN's propagation through the unrolled max
    "conv2d_maxpool_padded": ("y = self.conv(x)\ny = torch.where(y > 2.5, float('nan'), y)\n"
                              "return F.max_pool2d(y, 3, stride=2, padding=1)",
                              "[torch.randn(2, 5, 10, 9)]", "self.conv = nn.Conv2d(5, 6, 3)"),
    # clipped average windows without count_include_pad: the divisor is a count of the taps inside
    "conv2d_avgpool_exclude_pad": ("return F.avg_pool2d(self.conv(x), 3, stride=2, padding=1, count_include_pad=False)",
                                   "[torch.randn(2, 4, 9, 10)]", "self.conv = nn.Conv2d(4, 6, 3)"),
    # 3-D: a 2 x 2 x 2 max pool, then GELU (the pool fuses into the kernel after it)
    "conv3d_maxpool_gelu": ("return F.gelu(F.max_pool3d(self.conv(x), 2))", "[torch.randn(1, 3, 6, 7, 8)]",
                            "self.conv = nn.Conv3d(3, 4, 3)"),
    # a pool of a pool (KernelBench level 2 #6): the first is stored before the second unrolls over it
    "conv3d_two_maxpools": ("return F.max_pool3d(F.max_pool3d(torch.softmax(self.conv(x), 1), 2), 2)",
                            "[torch.randn(1, 3, 10, 10, 10)]", "self.conv = nn.Conv3d(3, 4, 3)"),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_a_pool_over_the_channels_last_output_is_one_tiled_pointwise_kernel(name: str, harness: Harness,
                                                                           tmp_path: Path) -> None:
    """After a channels-last convolution a pool reads NHWC and writes NCHW: its taps are unrolled into the
    pointwise kernel that stores it, which the pointwise template tiles (loads along channels, stores
    along W); a reduction kernel over NCHW outputs would read each element from a sector of its own.
    Judged against eager on odd shapes, with the GPU's tiles forced on the CPU too."""
    body, inputs, init = POOLS[name]
    path = problem(tmp_path, name, body, inputs, init=init)
    program = analyse(path)
    index = [v.id for v in program.variants].index(VARIANT)
    cand = render(program, program.variants[index], "cuda")
    kernels = cand.config.kernels
    if name == "conv3d_two_maxpools":  # 8 x 8 taps of a softmax: over the unroll's load limit, the second
        assert [k.template for k in kernels] == ["pointwise", "reduction", "reduction"], cand.structure  # stays a reduction
    else:  # the kernel storing the module's output (the pool and what follows it) is tiled; no reduction
        assert [k.template for k in kernels] == ["pointwise", "pointwise"], cand.structure
        assert kernels[-1].config.get("YBLOCK", 1) > 1, kernels
    for i, source in enumerate([offered(path, VARIANT).source, forced(path, variant=index, XBLOCK=16, YBLOCK=8).source]):
        verdict = accepted(harness, path, source, "default", tmp_path / f"judged{i}")
        assert verdict.kernels_launched


def test_a_pool_over_nchw_memory_stays_a_reduction(tmp_path: Path) -> None:
    """The NCHW plan's pool reads W-contiguous memory: the window reduction the H200 probes tuned, and a
    per-channel bias the pool's taps do not move is no reason to unroll."""
    path = problem(tmp_path, "nchw_pool", "return F.avg_pool2d(self.conv(x) + self.b, 2)", "[torch.randn(2, 4, 9, 10)]",
                   init="self.conv = nn.Conv2d(4, 6, 3)\nself.b = nn.Parameter(torch.randn(6, 1, 1))")
    program = analyse(path)
    cand = render(program, program.variant("fused"), "cuda")
    assert [k.template for k in cand.config.kernels] == ["reduction"], cand.config.kernels
