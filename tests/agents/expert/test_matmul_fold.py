"""Batch folded into N (agents/expert/templates/matmul_fold.py): a batched GEMM whose A is shared by
every batch entry (an implicit-GEMM convolution's weight, an expanded weight) is tiled over all the
entries' columns, so only the launch's last column tile is partial. Judged in the interpreter through
the real harness; the GPU render is read for what it folds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from expert_helpers import accepted, forced, launches, offered, problem
from pack_helpers import one_rule_pack

from agents.expert.design import analyse, design_candidates, render
from agents.expert.templates.matmul_fold import partial_tile_waste
from egg.evaluate.harness import Harness

CONV = "conv-gemm"


def _gemm(source: str) -> str:
    return next(k for k in source.split("@triton.jit") if "tl.dot(" in k)


def _grid(source: str, kernel_name: str) -> int:
    """Programs of the GEMM's launch (its first-launch call site, ``name[(programs,)]``)."""
    return int(re.search(rf"{kernel_name}\[\((\d+),\)\]", source).group(1))


def test_partial_tile_waste_is_the_masked_share_of_the_tiles() -> None:
    assert partial_tile_waste(1156, 128) == pytest.approx(124 / 1280)  # KernelBench level 2 #11
    assert partial_tile_waste(1024, 128) == 0.0
    assert partial_tile_waste(49, 64) == pytest.approx(15 / 64)


def test_a_convolution_with_partial_image_tiles_is_one_gemm_over_the_images(harness: Harness,
                                                                            tmp_path: Path) -> None:
    """3 images of 10 x 9 = 90 positions: per image, 2 tiles of 64 (29% masked); folded, 270 columns in
    5 tiles. The image and the position come from the column; the candidate is judged correct."""
    path = problem(tmp_path, "conv", "return torch.relu(self.conv(x)) + self.b", "[torch.randn(3, 8, 12, 11)]",
                   init="self.conv = nn.Conv2d(8, 6, 3)\nself.b = nn.Parameter(torch.randn(6, 1, 1))")
    cand = offered(path, CONV)
    assert "3 batch entries folded into N (270 columns)" in cand.structure, cand.structure
    assert "tiling/fold-batch-into-tiles" in cand.principle_ids
    gemm = _gemm(cand.source)
    assert "pid_b" not in gemm and "N = 270" in gemm
    assert re.search(r"tl\.store\(add_ptr \+ \(90\*rm \+ e_i\d+ \+ 540\*e_i\d+\)", gemm), gemm
    name = re.search(r"def (\w+)\(", gemm).group(1)
    assert _grid(cand.source, name) == 5  # BLOCK_N 64 on the CPU: cdiv(270, 64); per image it was 3 x 2
    verdict = accepted(harness, path, cand.source, "default", tmp_path / "judged")
    assert launches(verdict) == cand.kernels
    gpu = render(analyse(path), analyse(path).variant(CONV), "cuda")  # BLOCK_N 128: 3 tiles for 270
    assert "3 batch entries folded into N" in gpu.structure and _grid(gpu.source, name) == 3


def test_a_grouped_convolution_folds_its_images_and_keeps_its_groups_in_the_grid(harness: Harness,
                                                                                 tmp_path: Path) -> None:
    """The group picks A's rows (each group has its own weights), so only the image folds."""
    path = problem(tmp_path, "grouped", "return self.conv(x) * 2", "[torch.randn(3, 8, 13, 10)]",
                   init="self.conv = nn.Conv2d(8, 12, 3, stride=2, padding=1, groups=2)")
    cand = offered(path, CONV)
    assert "3 batch entries folded into N (105 columns)" in cand.structure, cand.structure  # 7 x 5 positions
    gemm = _gemm(cand.source)
    assert "pid_b" in gemm  # the group
    accepted(harness, path, cand.source, "default", tmp_path / "judged")
    # ragged tiles everywhere: masked rows, columns that straddle images, masked taps
    index = [v.id for v in analyse(path).variants].index(CONV)
    small = forced(path, variant=index, BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)
    assert "folded into N" in small.structure
    accepted(harness, path, small.source, "default", tmp_path / "small")


def test_an_expanded_weight_folds_and_per_batch_operands_do_not(harness: Harness, tmp_path: Path) -> None:
    """``bmm(w.expand(b, ...), x)`` shares A across the batch (folded); ``bmm(a, x)`` does not."""
    shared = problem(tmp_path, "shared", "return torch.bmm(self.w.expand(x.shape[0], -1, -1), x) * 0.5",
                     "[torch.randn(3, 40, 37)]", init="self.w = nn.Parameter(torch.randn(24, 40))")
    own = problem(tmp_path, "own", "return torch.bmm(a, x) * 0.5", "[torch.randn(3, 24, 40), torch.randn(3, 40, 37)]",
                  header="# args: a, x")
    for path, folds in ((shared, True), (own, False)):
        cands = [c for c in design_candidates(path) if "Triton bmm" in c.structure]
        assert cands, [c.structure for c in design_candidates(path)]
        for cand in cands:
            assert ("folded into N" in cand.structure) == folds, cand.structure
            accepted(harness, path, cand.source, "default", tmp_path / path.stem / cand.variant)


def test_rows_reduced_in_the_epilogue_are_never_folded(harness: Harness, tmp_path: Path) -> None:
    """A softmax over each entry's columns runs on the GEMM's tile: a tile spanning two entries would
    mix their rows, so the fold is refused and the candidate stays correct."""
    path = problem(tmp_path, "softmax", "return torch.softmax(torch.bmm(self.w.expand(x.shape[0], -1, -1), x), -1)",
                   "[torch.randn(3, 40, 37)]", init="self.w = nn.Parameter(torch.randn(24, 40))")
    rows = [c for c in design_candidates(path) if "row reduction(s) over its tiles" in c.structure]
    assert rows, [c.structure for c in design_candidates(path)]
    for cand in rows:
        assert "folded" not in cand.structure
        accepted(harness, path, cand.source, "default", tmp_path / cand.variant)


def test_positions_that_fill_their_tiles_are_not_folded(tmp_path: Path) -> None:
    """8 x 8 = 64 positions in tiles of 64: nothing is masked, so the per-image grid stays."""
    path = problem(tmp_path, "even", "return F.relu(self.conv(x))", "[torch.randn(2, 4, 10, 10)]",
                   init="self.conv = nn.Conv2d(4, 8, 3)")
    cand = offered(path, CONV)
    assert "folded" not in cand.structure and "pid_b" in _gemm(cand.source)
    assert "tiling/fold-batch-into-tiles" not in cand.principle_ids


def test_a_pack_switches_the_fold_off(harness: Harness, tmp_path: Path) -> None:
    from agents.expert.choices import decisions_for
    from egg.device import default_facts
    from principles import load_packs

    path = problem(tmp_path, "conv", "return torch.relu(self.conv(x))", "[torch.randn(3, 8, 12, 11)]",
                   init="self.conv = nn.Conv2d(8, 6, 3)")
    root = one_rule_pack(tmp_path, "house/per-image-tiles", ["conv"],
                         {"constants": {"tiling/fold-batch-min-waste": 2.0}})
    decisions = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    cand = next(c for c in design_candidates(path, decisions=decisions) if c.variant == CONV)
    assert "folded" not in cand.structure and "pid_b" in _gemm(cand.source)
    accepted(harness, path, cand.source, "default", tmp_path / "judged")
    builtin = next(c for c in design_candidates(path) if c.variant == CONV)
    assert "folded into N" in builtin.structure
