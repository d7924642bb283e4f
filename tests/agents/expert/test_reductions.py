"""Reductions over any axes, their fusion with the pointwise work around them, in both structures
(persistent: rows in registers; looped: passes over the rows, online softmax, Welford), through
the judge on odd shapes."""

from __future__ import annotations

from pathlib import Path

import pytest
from expert_helpers import accepted, check, forced, launches, problem

from egg.evaluate.harness import Harness

X3 = "[torch.randn(7, 19, 23)]"
REDUCTIONS = {
    "sum_last": "return x.sum(-1)",
    "sum_dim1_keepdim": "return x.sum(1, keepdim=True) * 2",
    "mean_dim0": "return x.mean(0)",
    "mean_dims_0_2": "return x.mean((0, 2))",  # non-adjacent axes
    "amax_dim1": "return x.amax(1)",
    "amin_all": "return x.amin()",
    "max_dim_values_indices": "v, i = x.max(dim=1)\nreturn v, i",
    "min_dim_keepdim": "v, i = torch.min(x, dim=2, keepdim=True)\nreturn v * 2, i",
    "argmax_last": "return x.argmax(-1)",
    "argmin_dim0": "return x.argmin(0)",
    "argmax_flat": "return x.argmax()",
    "prod_dim1": "return (x * 0.1 + 1).prod(1)",
    "any_all": "return (x > 2).any(1), (x > -3).all(-1)",
    "var_unbiased": "return x.var(1)",
    "std_dims": "return x.std((1, 2), keepdim=True)",
    "var_mean_pair": "v, m = torch.var_mean(x, -1, correction=0)\nreturn v, m",
    "vector_norms": "return torch.linalg.vector_norm(x, 2, -1), torch.linalg.vector_norm(x, float('inf'), 1)",
    "frobenius": "return x / torch.norm(x, p='fro')",
    "sum_of_slice": "return x[:, 2:17:3].sum(1)",
}
FUSED = {
    "softmax_mid_dim": "return torch.softmax(x, dim=1)",
    "log_softmax_last": "return F.log_softmax(x * 0.5, dim=-1)",
    "logsumexp": "return torch.logsumexp(x, dim=-1)",
    "layer_norm_by_hand": "m = x.mean(-1, keepdim=True)\nv = ((x - m) ** 2).mean(-1, keepdim=True)\n"
                          "return (x - m) / torch.sqrt(v + 1e-5)",
    "rms_norm_functional": "return F.rms_norm(x, (23,), eps=1e-6)",
    "residual_and_norm": "r = x + 1.0\nreturn F.layer_norm(r, (23,)), r",
    "minus_mean_dim0": "return F.gelu(x - x.mean(0, keepdim=True))",
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(name: str, harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, name, REDUCTIONS[name], X3)
    check(harness, path, tmp_path, torch_ops=[])


@pytest.mark.parametrize("name", sorted(FUSED))
def test_a_row_reduction_and_its_neighbours_are_one_kernel(name: str, harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, name, FUSED[name], X3)
    check(harness, path, tmp_path, kernels=1, torch_ops=[])


@pytest.mark.parametrize("name", ["softmax_mid_dim", "log_softmax_last", "logsumexp", "layer_norm_by_hand",
                                  "residual_and_norm"])
def test_looped_structure(name: str, harness: Harness, tmp_path: Path) -> None:
    """RBLOCK smaller than the row: passes over it (online softmax, Welford), same results."""
    path = problem(tmp_path, name, FUSED[name], X3)
    c = forced(path, PERSISTENT=False, RBLOCK=8, XBLOCK=32)
    assert "for roffset" in c.source
    if name in ("softmax_mid_dim", "log_softmax_last", "logsumexp"):
        assert c.source.count("over the reduced extent") <= 2  # max and sum in one pass
    verdict = accepted(harness, path, c.source, "default", tmp_path / "looped")
    assert launches(verdict) == c.kernels == 1


@pytest.mark.parametrize("name", ["sum_dim1_keepdim", "argmax_last", "argmin_dim0", "amin_all", "prod_dim1",
                                  "any_all", "var_unbiased", "max_dim_values_indices"])
def test_looped_plain_reductions(name: str, harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, name, REDUCTIONS[name], X3)
    c = forced(path, PERSISTENT=False, RBLOCK=8, XBLOCK=32)
    accepted(harness, path, c.source, "default", tmp_path / "looped")


# ties everywhere (three values), NaN in ~10% of the elements (rows with none, one and several), and a
# row of -inf only: the looped argmax/argmin combine takes a lane's elements in row order, so a tie
# keeps the earlier index, the first NaN wins, and a row equal to the empty accumulator's -inf
# still answers its first index (helpers._egg_argmax)
TIED = ("[torch.where(torch.rand(7, 45) < 0.1, float('nan'), torch.randint(0, 3, (7, 45)).float())"
        ".index_fill(0, torch.tensor([2]), float('-inf'))]")


@pytest.mark.parametrize("body", ["return x.argmax(-1)", "return x.argmin(-1)", "return x.argmax(0)",
                                  "return torch.nan_to_num(x, nan=5.0).argmin(1)"])
def test_looped_argmax_keeps_torchs_first_index(body: str, harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "tied", body, TIED)
    c = forced(path, PERSISTENT=False, RBLOCK=8, XBLOCK=4)
    assert "for roffset" in c.source
    accepted(harness, path, c.source, "default", tmp_path / "looped")


def test_an_ablation_that_matches_by_chance_is_drawn_again(harness: Harness, tmp_path: Path) -> None:
    """Under seed 1393 the ablation's first input draw has every row's minimum first, so the argmin is
    all zeros, which is what poisoned integer writes read: an honest kernel matched under poison
    (CI, 2026-12-05). The judge draws again; a kernel that does no work matches on every draw
    (tests/evaluate/test_adversarial.py)."""
    from egg.evaluate import EvalOptions

    path = problem(tmp_path, "tied", "return torch.nan_to_num(x, nan=5.0).argmin(1)", TIED)
    c = forced(path, PERSISTENT=False, RBLOCK=8, XBLOCK=4)
    where = tmp_path / "seeded"
    where.mkdir()
    (where / "candidate.py").write_text(c.source)
    verdict = harness.evaluate(path, where / "candidate.py", EvalOptions(device="cpu", timeout_s=300, seed=1393), where)
    assert verdict.accepted, verdict.reasons
    assert any(n.startswith("kernel ablation: the first input draw matched under poison") for n in verdict.notes)


def test_fp16_reductions_round_like_eager(harness: Harness, tmp_path: Path) -> None:
    body = "return x.sum(1), x.mean(-1), torch.softmax(x, -1), x.amax(0)"
    path = problem(tmp_path, "fp16", body, "[torch.randn(9, 33).half()]")
    check(harness, path, tmp_path, torch_ops=[])


def test_long_total_is_split_into_partials(harness: Harness, tmp_path: Path) -> None:
    """A global reduction of a long tensor: chunk partials, then a fixed-order second stage."""
    path = problem(tmp_path, "total", "return x.abs().sum(), x.var()", "[torch.randn(9001, 3)]")
    cands = check(harness, path, tmp_path, torch_ops=[])
    assert "_part" in cands[0].source and cands[0].kernels == 2


def test_batch_norm_statistics_split_and_running_stats(harness: Harness, tmp_path: Path) -> None:
    """Training BatchNorm: per-channel Welford statistics (split: few channels, long rows), the
    normalisation, and the running-stat buffers updated in place as the module does."""
    path = problem(tmp_path, "bn", "return self.bn(x)", "[torch.randn(4, 3, 50, 50)]", init="self.bn = nn.BatchNorm2d(3)")
    cands = check(harness, path, tmp_path, torch_ops=[])
    assert "running_mean" in cands[0].source


@pytest.mark.parametrize("body", ["return x.sum(0)", "return x.var(0), x.amax(0)", "return self.bn(x)"])
def test_a_column_reduction_splits_with_its_chunks_outside_the_outputs(body: str, harness: Harness,
                                                                       tmp_path: Path) -> None:
    """A reduction over dim 0 of a tall matrix (a batch norm's statistics over a GEMM output) has few
    column-major programs (40 outputs: one block of 256); it splits into 32 chunks of rows (12001:
    the last chunk masked) whose partials are (chunks, outputs), so a stage-1 program's lanes still
    read contiguous columns, then a stage 2 over the chunks. Judged against eager."""
    path = problem(tmp_path, "columns", body, "[torch.randn(12001, 40)]", init="self.bn = nn.BatchNorm1d(40)")
    cands = check(harness, path, tmp_path, torch_ops=[])
    source = cands[0].source
    assert "_part" in source and "(32, 40)" in source and "(40, 32)" not in source, source[-3000:]


@pytest.mark.parametrize("module", ["nn.LayerNorm(23)", "nn.GroupNorm(4, 8)", "nn.InstanceNorm1d(8)",
                                    "nn.BatchNorm1d(8)", "nn.LayerNorm([8, 23], elementwise_affine=False)"])
def test_norm_modules(module: str, harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "norm", "return self.norm(x)", "[torch.randn(5, 8, 23)]", init=f"self.norm = {module}")
    check(harness, path, tmp_path, torch_ops=[])


def test_batch_norm_eval(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "bn_eval", "return self.bn(x) * 2", "[torch.randn(4, 6, 5, 5)]",
                   init="self.bn = nn.BatchNorm2d(6)\nself.bn.eval()")
    check(harness, path, tmp_path, kernels=1, torch_ops=[])


def test_a_reduction_walks_its_elements_in_memory_order(harness: Harness, tmp_path: Path) -> None:
    """A load that walks the top reduced digit with stride 1 (a sum and a softmax over a transposed
    input's rows) reorders the kernel's rindex; a row-major LayerNorm and an argmax (positions
    matter) keep the graph's order. Judged against eager either way."""
    from agents.expert.design import design_candidates

    path = problem(tmp_path, "sum_t", "return x.permute(0, 2, 1).reshape(3, -1).sum(1), "
                   "torch.softmax(x.transpose(1, 2).reshape(3, -1), -1)", "[torch.randn(3, 4, 6)]")
    cands = check(harness, path, tmp_path)
    assert "walked in memory order" in cands[0].structure, cands[0].structure
    for body in ("return F.layer_norm(x, (4, 6))", "return x.permute(0, 2, 1).reshape(3, -1).argmax(1)"):
        path = problem(tmp_path, "kept", body, "[torch.randn(3, 4, 6)]")
        assert all("memory order" not in c.structure for c in design_candidates(path)), body


# (body, inputs): reductions over the middle axis of [B, R, C], judged as their CUDA candidates
MIDDLE_AXIS = {
    "max_values": ("return torch.max(x, dim=1)[0]", "[torch.rand(4, 96, 33)]"),  # rows fit: persistent
    "softmax": ("return torch.softmax(x, dim=1)", "[torch.randn(5, 300, 37)]"),
    "normalize": ("return F.normalize(x, dim=1)", "[torch.randn(5, 300, 37)]"),
    "sum_keepdim": ("return x.sum(1, keepdim=True) * 2", "[torch.randn(5, 300, 37)]"),
    "var": ("return x.var(1)", "[torch.randn(5, 300, 37)]"),
    "argmax": ("return x.argmax(1)", "[torch.randn(5, 300, 37)]"),
}


@pytest.mark.parametrize("name", sorted(MIDDLE_AXIS))
def test_a_reduction_over_a_middle_axis_gives_each_program_contiguous_outputs(name: str, harness: Harness,
                                                                               tmp_path: Path) -> None:
    """With an odd C (KernelBench level 1 #49/#53: max over dim 1) the output's contiguous index is
    the lowest digit of xindex (``xindex % C``), so on CUDA a program takes a block of contiguous
    outputs (its lanes read adjacent addresses) and loops over R in tiles. Until 2026-12-03 the digit
    was missed (the whole index holds rindex too) and each program reduced one strided column:
    16.7 ms, 0.15x of torch.compile on the H200. The CUDA candidate itself, judged here."""
    from agents.expert.design import design_candidates, read_config

    body, inputs = MIDDLE_AXIS[name]
    path = problem(tmp_path, name, body, inputs)
    cand = design_candidates(path, device="cuda")[0]
    config = read_config(cand.source)
    assert config is not None and config.kernels[0].config["XBLOCK"] >= 32, config
    assert "parallel-mapping/reduce-non-contiguous-axis" in cand.principle_ids
    accepted(harness, path, cand.source, "default", tmp_path / "cuda")


def test_a_persistent_tile_stays_within_the_row_limit_whatever_xblock_a_move_asks(tmp_path: Path) -> None:
    """A stage-2 mapping move turned KernelBench level 1 #51 (argmax over dim 1 of [128, 4096,
    4095]: contiguous outputs, 256 a program) persistent, 256 x 4096 values in registers; the GPU
    compile did not finish in 300 s. The render keeps XBLOCK x RBLOCK within
    ``tiling/persistent-row-max`` and says what it used."""
    from agents.expert.design import read_config
    from agents.expert.target import PERSISTENT_ROW_MAX, as_target

    path = problem(tmp_path, "argmax_dim1", "return x.argmax(1)", "[torch.randn(2, 512, 33)]")
    c = forced(path, device="cuda", PERSISTENT=True, XBLOCK=512)
    (kernel,) = read_config(c.source).kernels
    assert kernel.config["PERSISTENT"] is True and kernel.config["RBLOCK"] == 512
    assert kernel.config["XBLOCK"] * kernel.config["RBLOCK"] <= as_target("cuda").const(PERSISTENT_ROW_MAX)


EDGE_ROWS = ("def _edge():\n    x = torch.randn(7, 19, 23)\n    x[0] = float('-inf')\n    x[1, :, :9] = float('-inf')\n"
             "    x[2, 3, 7] = float('nan')\n    x[3, 1, 2] = float('inf')\n    x[4, :, 20:] = 80.0\n    return x\n")


@pytest.mark.parametrize("mode", ["persistent", "looped", "lanes"])
def test_online_softmax_keeps_torchs_answers_on_inf_and_nan_rows(mode: str, harness: Harness,
                                                                tmp_path: Path) -> None:
    """Rows all -inf, -inf in the first passes, a NaN, a +inf, a late jump of the max: softmax,
    logsumexp and the max itself as torch gives them (NaN where torch has NaN). ``looped``: the row's
    running max (ONLINE_MAX="row"); ``lanes``: one kept per lane (the default), for softmax's group;
    logsumexp's guarded max keeps the row's in both."""
    path = problem(tmp_path, "edges", "return torch.softmax(x, -1), torch.logsumexp(x, -1), x.amax(-1)",
                   "[_edge()]", header=EDGE_ROWS)
    looped = mode != "persistent"
    online = {"ONLINE_MAX": "lane" if mode == "lanes" else "row"}
    c = forced(path, PERSISTENT=False, RBLOCK=8, XBLOCK=4, **online) if looped else forced(path)
    assert ("for roffset" in c.source) == looped
    assert ("tl.exp(-tl.abs(" in c.source) == (mode == "lanes"), c.source
    accepted(harness, path, c.source, "default", tmp_path / "run")
    if looped:  # the interpreter's max propagates NaN whatever the code says (numpy); the GPU's does
        # not, so the GPU render's online max asks for it (GPU test softmax_online_nan: the effect)
        gpu = forced(path, device="cuda", PERSISTENT=False, RBLOCK=8, XBLOCK=4, **online).source
        assert "tl.reduce(" in gpu and "_egg_max_nan)[:, None])" in gpu, gpu
