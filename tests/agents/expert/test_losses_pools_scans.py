"""KernelBench-style losses, pools and scans through the judge: reductions over windows and rows,
masked padding, running totals; each with the kernel count a good fusion gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from expert_helpers import accepted, check, forced, problem

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
