"""KernelBench-style losses, pools and scans through the judge: reductions over windows and rows,
masked padding, running totals; each with the kernel count a good fusion gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from expert_helpers import accepted, check, forced, problem

from agents.expert.design import read_config

from egg.evaluate.harness import Harness

PAIR = "[torch.randn(17, 11), torch.randn(17, 11)]"
LOSSES = {
    # name: (args, body, inputs, kernels)
    "mse": ("a, b", "return F.mse_loss(a, b)", PAIR, 1),
    "l1_sum": ("a, b", "return F.l1_loss(a, b, reduction='sum')", PAIR, 1),
    "smooth_l1": ("a, b", "return F.smooth_l1_loss(a, b, beta=0.5)", PAIR, 1),
    "huber": ("a, b", "return F.huber_loss(a, b, delta=0.7)", PAIR, 1),
    "kl_div": ("a, b", "return F.kl_div(a.log_softmax(-1), b.softmax(-1), reduction='batchmean')", PAIR, 2),
    "bce": ("a, b", "return F.binary_cross_entropy(a.sigmoid(), b.sigmoid())", PAIR, 1),
    "bce_logits": ("a, b", "return F.binary_cross_entropy_with_logits(a, (b > 0).float())", PAIR, 1),
    "cross_entropy": ("a, t", "return F.cross_entropy(a, t)", "[torch.randn(13, 11), torch.randint(0, 11, (13,))]", 2),
    "nll": ("a, t", "return F.nll_loss(a.log_softmax(1), t)", "[torch.randn(13, 11), torch.randint(0, 11, (13,))]", 2),
    "hinge": ("a, b", "return F.hinge_embedding_loss(a, torch.sign(b))", PAIR, 1),
    "margin_ranking": ("a, b", "return F.margin_ranking_loss(a[:, 0], b[:, 0], torch.sign(a[:, 1]), margin=0.2)",
                       PAIR, 1),
    "triplet": ("a, b", "return F.triplet_margin_loss(a, b, a.flip(0), margin=1.0)", PAIR, 2),
    "cosine_embedding": ("a, b", "return F.cosine_embedding_loss(a, b, torch.sign(a[:, 0]))", PAIR, 2),
    "cosine_similarity": ("a, b", "return F.cosine_similarity(a, b, dim=1)", PAIR, 1),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses(name: str, harness: Harness, tmp_path: Path) -> None:
    args, body, inputs, kernels = LOSSES[name]
    path = problem(tmp_path, name, body, inputs, header=f"# args: {args}")
    check(harness, path, tmp_path, kernels=kernels, torch_ops=[])


POOLS = {
    "max2d": ("return F.max_pool2d(x, 3, 2, 1)", "[torch.randn(2, 3, 11, 9)]"),
    "max2d_dilated_ceil": ("return F.max_pool2d(x, 2, 2, 0, dilation=2, ceil_mode=True)", "[torch.randn(2, 3, 11, 9)]"),
    "max3d": ("return F.max_pool3d(x, 2, 2)", "[torch.randn(2, 3, 6, 5, 7)]"),
    "max1d": ("return F.max_pool1d(x, 4, 3, 1)", "[torch.randn(2, 5, 17)]"),
    "avg2d_pad": ("return F.avg_pool2d(x, 3, 2, 1)", "[torch.randn(2, 3, 11, 9)]"),
    "avg2d_exclude_pad": ("return F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)", "[torch.randn(2, 3, 11, 9)]"),
    "avg2d_ceil": ("return F.avg_pool2d(x, 2, 2, ceil_mode=True) * 2", "[torch.randn(2, 3, 7, 9)]"),
    "avg3d": ("return F.avg_pool3d(x, 3, 2, 1)", "[torch.randn(2, 2, 6, 5, 7)]"),
    "avg1d": ("return F.avg_pool1d(x, 3, 2)", "[torch.randn(2, 5, 17)]"),
    "adaptive_global": ("return F.adaptive_avg_pool2d(x, 1).clamp(-0.1, 0.1)", "[torch.randn(2, 4, 7, 9)]"),
    "adaptive_uneven": ("return F.adaptive_avg_pool2d(x, (3, 4))", "[torch.randn(2, 4, 7, 9)]"),
    "adaptive_max": ("return F.adaptive_max_pool2d(x, (2, 3))", "[torch.randn(2, 4, 7, 9)]"),
    "adaptive_3d": ("return F.adaptive_avg_pool3d(x, 1)", "[torch.randn(2, 3, 4, 5, 3)]"),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pools(name: str, harness: Harness, tmp_path: Path) -> None:
    body, inputs = POOLS[name]
    path = problem(tmp_path, name, body, inputs)
    check(harness, path, tmp_path, kernels=1, torch_ops=[])


SCANS = {
    "cumsum_last": "return x.cumsum(-1)",
    "cumsum_dim0": "return torch.cumsum(x, 0) * 2",
    "cumprod_mid": "return (x * 0.1 + 1).cumprod(1)",
    "reverse_cumsum": "return x.flip(1).cumsum(1).flip(1)",
    "exclusive_cumsum": "return torch.cat([torch.zeros_like(x[:, :1]), x.cumsum(1)[:, :-1]], dim=1)",
}


@pytest.mark.parametrize("name", sorted(SCANS))
def test_scans(name: str, harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, name, SCANS[name], "[torch.randn(6, 37, 5)]")
    kernels = 2 if name == "exclusive_cumsum" else 1  # the shifted copy reads another element of the scan
    check(harness, path, tmp_path, kernels=kernels, torch_ops=[])


@pytest.mark.parametrize("name", ["cumsum_last", "cumprod_mid", "reverse_cumsum"])
def test_scans_in_chunks(name: str, harness: Harness, tmp_path: Path) -> None:
    """A scanned dim longer than RBLOCK: the running carry joins the chunks."""
    path = problem(tmp_path, name, SCANS[name], "[torch.randn(6, 37, 5)]")
    c = forced(path, RBLOCK=8, XBLOCK=2)
    accepted(harness, path, c.source, "default", tmp_path / "chunks")


def test_fp16_scan(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "scan16", "return x.cumsum(1)", "[torch.randn(5, 40).half()]")
    check(harness, path, tmp_path, kernels=1)


# The GPU's window rule (agents/expert/templates/reduction.py, _window): a pool's taps are walked one
# (or a few) at a time over XBLOCK outputs. CPU runs render with the interpreter's heuristics, so
# these render the GPU configs and run them in the interpreter through the judge.
# a small reduction over dim 1 of NCHW is one too: its outputs are what is contiguous
SMALL_COLUMNS = {"dim1_of_nchw": ("return x.amax(1) + x.mean(1)", "[torch.randn(2, 8, 5, 7)]")}
WINDOWS = ("max2d", "max2d_dilated_ceil", "max3d", "max1d", "avg2d_pad", "avg2d_exclude_pad", "avg3d", "avg1d",
           "dim1_of_nchw")
NOT_WINDOWS = {  # small reductions whose rows are contiguous
    "adaptive_global": POOLS["adaptive_global"],
    "row_sum_16": ("return x.sum(-1)", "[torch.randn(64, 16)]"),
}
WINDOW_CONFIGS = ({}, {"RBLOCK": 2, "XBLOCK": 64}, {"PERSISTENT": True, "XBLOCK": 128})


@pytest.mark.parametrize("name", WINDOWS)
def test_window_pools_walk_taps_over_outputs_on_the_gpu_configs(name: str, harness: Harness, tmp_path: Path) -> None:
    body, inputs = {**POOLS, **SMALL_COLUMNS}[name]
    path = problem(tmp_path, name, body, inputs)
    for i, config in enumerate(WINDOW_CONFIGS):
        c = forced(path, device="cuda", **config)
        (kernel,) = read_config(c.source).kernels
        expected = {"PERSISTENT": False, "RBLOCK": 1, "num_warps": 4, **config}
        if expected["PERSISTENT"]:  # the whole window in registers: RBLOCK is the window's power of two
            del expected["RBLOCK"]
        assert {k: kernel.config[k] for k in expected} == expected
        assert kernel.config["XBLOCK"] >= 64  # 256 outputs a program, fewer only where there are fewer
        accepted(harness, path, c.source, "default", tmp_path / f"c{i}")


def test_a_padded_tap_is_one_predicated_load_with_the_pools_neutral_as_other(harness: Harness,
                                                                            tmp_path: Path) -> None:
    """A max pool's padding is ``Masked(inside, x[...], -inf)``: where the load's mask is that test
    alone, ``tl.load(..., other=-inf)`` is the value (no select after it; level 1 #41 on an H100:
    2.915 -> 2.744 ms, 2026-12-06). Where the reduced dim is masked too (RBLOCK 2 over 9 taps), a
    padded lane of the chunk must not read as the load's ``other``, so the select stays."""
    body, inputs = POOLS["max2d"]
    path = problem(tmp_path, "max2d", body, inputs)
    plain = forced(path, device="cuda")  # RBLOCK 1: no row mask
    assert 'other=float("-inf"))' in plain.source, plain.source
    assert not re.search(r"tl\.where\(\w+, \w+, float\(\"-inf\"\)\)", plain.source), plain.source
    accepted(harness, path, plain.source, "default", tmp_path / "plain")
    chunked = forced(path, device="cuda", RBLOCK=2, XBLOCK=64)
    assert "rmask" in chunked.source and re.search(r"tl\.where\(\w+, \w+, float\(\"-inf\"\)\)", chunked.source)
    accepted(harness, path, chunked.source, "default", tmp_path / "chunked")


def test_a_norm_over_dim_1_of_nchw_keeps_its_columns_in_registers(harness: Harness, tmp_path: Path) -> None:
    """KernelBench level 1 #36 (RMSNorm over the 64 channels of NCHW): every reduced element is stored
    again, so walking the channels one at a time (the window rule) would read the tensor twice; the
    GPU config is a persistent tile of contiguous positions x all channels, one pass, and it is right."""
    path = problem(tmp_path, "rms_dim1", "return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)",
                   "[torch.randn(2, 16, 9, 10)]")
    c = forced(path, device="cuda")
    (kernel,) = read_config(c.source).kernels
    assert kernel.config["PERSISTENT"] and kernel.config["XBLOCK"] > 1, kernel.config
    assert "persistent" in c.structure and "pass 2" not in c.source, c.structure
    accepted(harness, path, c.source, "default", tmp_path / "judged")


@pytest.mark.parametrize("name", sorted(NOT_WINDOWS))
def test_row_and_column_reductions_are_not_windows(name: str, tmp_path: Path) -> None:
    body, inputs = NOT_WINDOWS[name]
    path = problem(tmp_path, name, body, inputs)
    c = forced(path, device="cuda")
    assert all(k.config["RBLOCK"] != 1 or k.config["PERSISTENT"] for k in read_config(c.source).kernels)
