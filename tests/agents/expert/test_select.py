"""Order statistics (top-k thresholds, kthvalue) computed in the reduction kernel, in the spellings
sampling code uses, through the judge in both structures; other uses of topk keep torch's call."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from expert_helpers import accepted, check, forced, fp16_copy, launches, problem

from agents.expert.choices import decisions_for
from agents.expert.design import design_candidates
from egg.device import default_facts
from egg.evaluate.harness import Harness
from principles import load_packs

ROWS = "[torch.randn(6, 37) * 2]"
TIED = "[torch.randint(-3, 3, (6, 37)).float()]"  # heavy ties: the looped sweep cannot be sure
SPELLINGS = {
    # Hugging Face TopKLogitsWarper
    "hf_warper": "remove = x < torch.topk(x, 5)[0][..., -1, None]\nreturn x.masked_fill(remove, -float('inf'))",
    # gpt-fast's sample()
    "gpt_fast": "v, _ = torch.topk(x, 7)\npivot = v.select(-1, -1).unsqueeze(-1)\n"
                "x = torch.where(x < pivot, -float('Inf'), x)\nreturn torch.softmax(x / 0.8, dim=-1)",
    # nanoGPT's generate(): an index by a constant list, then a boolean-mask assignment
    "nanogpt": "x = x / 0.8\nv, _ = torch.topk(x, min(5, x.size(-1)))\nx[x < v[:, [-1]]] = -float('Inf')\n"
               "return F.softmax(x, dim=-1)",
    "values_slice": "t = torch.topk(x * 1.5, 3, dim=-1).values[:, -1:]\nreturn torch.softmax((x * 1.5).masked_fill("
                    "x * 1.5 < t, float('-inf')), dim=-1)",
    "smallest_mid_dim": "return torch.topk(x.view(6, 37, 1), 4, dim=1, largest=False).values[:, 3]",
    "kthvalue": "return torch.kthvalue(x, 9, dim=-1).values",
    "kthvalue_keepdim": "v, _ = torch.kthvalue(x, 37, 1, keepdim=True)\nreturn x - v",
    "top1": "return torch.topk(x, 1).values * 2",
}


@pytest.mark.parametrize("inputs", [ROWS, TIED], ids=["distinct", "tied"])
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_topk_thresholds_are_order_statistics_in_the_kernel(name: str, inputs: str, harness: Harness,
                                                           tmp_path: Path) -> None:
    path = problem(tmp_path, name, SPELLINGS[name], inputs)
    cands = check(harness, path, tmp_path, torch_ops=[])
    assert "_bit" in cands[0].source  # the bisection over keys, not a sort


@pytest.mark.parametrize("inputs", [ROWS, TIED, "[torch.full((6, 37), 2.0)]"], ids=["distinct", "tied", "equal"])
@pytest.mark.parametrize("name", ["gpt_fast", "smallest_mid_dim", "kthvalue_keepdim"])
def test_looped_select_is_exact_with_and_without_the_row_sweeps(name: str, inputs: str, harness: Harness,
                                                               tmp_path: Path) -> None:
    """RBLOCK 8 over rows of 37: four kept keys a lane hold 32 of 37 values, so k near the row
    length or ties send rows through the per-bit sweeps; the judge decides either way."""
    path = problem(tmp_path, name, SPELLINGS[name], inputs)
    c = forced(path, PERSISTENT=False, RBLOCK=8, XBLOCK=4)
    assert "for roffset" in c.source and "if tl.max(" in c.source
    verdict = accepted(harness, path, c.source, "default", tmp_path / "looped")
    assert launches(verdict) == c.kernels


KEEP_TORCH = {
    "indices_used": "v, i = torch.topk(x, 3)\nreturn v[:, -1:] * 2, i",
    "other_column": "return torch.topk(x, 3).values[:, 1:2] * 2",
    "unsorted": "return torch.topk(x, 3, sorted=False).values[:, -1] + 1",
    "all_values": "return torch.topk(x, 3).values.sum(-1)",
    "index_two_columns": "v = torch.topk(x, 3).values\nreturn x - v[:, [0, 2]].sum(-1, keepdim=True)",
}


@pytest.mark.parametrize("name", sorted(KEEP_TORCH))
def test_other_uses_of_topk_keep_the_torch_call(name: str, harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, name, KEEP_TORCH[name], ROWS)
    cands = check(harness, path, tmp_path)
    assert cands[0].torch_ops == ["aten.topk"]


def test_the_sampling_workload_is_one_kernel_in_both_structures(harness: Harness, tmp_path: Path) -> None:
    """topk_sampling_logits (temperature, top-k mask, softmax) at its odd shape (5 x 50257, k 40,
    fp16 here): one reduction kernel, no torch.topk; looped by default at this row length."""
    path = fp16_copy("topk_sampling_logits", tmp_path)
    cands = check(harness, path, tmp_path / "default", shape_set="odd", kernels=1, torch_ops=[])
    assert "algorithm-structure/order-statistic-not-sort" in cands[0].principle_ids


def test_a_boolean_mask_assignment_of_one_value_is_a_where(harness: Harness, tmp_path: Path) -> None:
    """``x[mask] = v`` (one value, mask over x's shape or its leading dims) fuses; several values
    are left to torch's index_put."""
    one = problem(tmp_path, "mask_one", "y = x * 2\ny[y > 1] = 0.5\nz = x + 1\nz[x[:, 0] < 0] = -1.0\n"
                                        "return y + z", ROWS)
    check(harness, one, tmp_path / "one", kernels=1, torch_ops=[])
    rows = problem(tmp_path, "mask_rows", "y = x * 2\ny[x[:, 0] < 0] = torch.linspace(0, 1, 37)\nreturn y",
                   ROWS)
    assert check(harness, rows, tmp_path / "rows")[0].torch_ops == ["aten.index_put"]


def test_a_pack_sets_the_keys_each_lane_keeps(harness: Harness, tmp_path: Path) -> None:
    """``order-statistic-keys-per-lane`` comes from the packs: two keys a lane (and the long rows
    the persistent-row limit sends to the looped sweep) render two kept tiles, still exact."""
    path = problem(tmp_path, "gpt_fast", SPELLINGS["gpt_fast"], TIED)
    root = tmp_path / "house"
    root.mkdir()
    decision = {"constants": {"algorithm-structure/order-statistic-keys-per-lane": 2, "tiling/persistent-row-max": 16}}
    (root / "pack.yaml").write_text(yaml.safe_dump({
        "name": "house", "version": "1.0.0", "description": "Two keys a lane.",
        "principles": [{"id": "house/two-keys", "stage": "hardware_tuning", "focus": "tiling",
                        "applies_to": ["reduction"], "text": "Keep two.", "decisions": [decision]}]}))
    decisions = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    c = design_candidates(path, device="cpu", decisions=decisions)[0]
    kept = "= tl.zeros([XBLOCK, RBLOCK], tl.uint32)"
    assert c.source.count(kept) == 2
    assert "house/two-keys" in c.principle_ids
    default = design_candidates(path, device="cpu")[0]
    assert kept not in default.source  # 37 values a row: the persistent bisection in registers
    accepted(harness, path, c.source, "default", tmp_path / "two")


# rows whose 5th largest is +0.0 with -0.0 below it in other lanes: the float test keeps the -0.0s
# (-0.0 < 0.0 is false), their keys are below the threshold's (each lane holds one kept value, so
# the kept keys alone look exact); and a row with more NaNs than k (a NaN threshold)
SIGNED_ZEROS = ("[torch.cat([torch.arange(1., 5.).repeat(6, 1), torch.zeros(6, 1), -torch.zeros(6, 3), "
                "-torch.rand(6, 29) - 1], 1)]")
NANS = ("[torch.randn(6, 37).index_put_((torch.tensor([0] * 8 + [1]), torch.tensor([*range(8), 9])), "
        "torch.tensor(float('nan')))]")  # row 0: 8 NaNs, one a lane (a NaN threshold); row 1: one


ROW_KINDS = {"distinct": ROWS, "tied": TIED, "signed_zeros": SIGNED_ZEROS, "nans": NANS,
             "fp16": "[(torch.randn(6, 37) * 2).half()]"}
# every row kind on one spelling, the two that decide the branch on the others (CI's time); nanoGPT's
# k = 5 puts the threshold on the +0.0 of SIGNED_ZEROS (the 0 guard's red team: without the guard
# the judge rejects it), gpt-fast's k = 7 on a -0.0, where the float and key tests agree
KEPT_CASES = [("gpt_fast", kind) for kind in ROW_KINDS] + [
    (name, kind) for name in ("nanogpt", "values_slice") for kind in ("distinct", "signed_zeros")]


@pytest.mark.parametrize(("name", "kind"), KEPT_CASES, ids=[f"{n}-{k}" for n, k in KEPT_CASES])
def test_a_softmax_after_a_looped_select_reduces_the_kept_keys(name: str, kind: str, harness: Harness,
                                                              tmp_path: Path) -> None:
    """The max and sum of a top-k softmax read the lanes' kept keys (two passes over the row, not
    three) where those hold every kept element, and take the pass where not (ties, a threshold of
    0 or NaN); fp16 rows compare the 16-bit values the fp32 keys came from. KEPT_REDUCE False
    renders the pass alone (judged on the distinct rows). The judge decides each."""
    path = problem(tmp_path, name, SPELLINGS[name], ROW_KINDS[kind])
    kept = forced(path, PERSISTENT=False, RBLOCK=8, XBLOCK=4, KEPT_STORE=True)
    assert "else:  # every kept element is a lane's kept key: reduce those" in kept.source
    assert "else:  # every kept element is a lane's kept key at a known position" in kept.source
    assert {"algorithm-structure/reduce-kept-keys", "algorithm-structure/store-kept-keys"} <= set(kept.principle_ids)
    accepted(harness, path, kept.source, "default", tmp_path / "kept")
    plain = forced(path, PERSISTENT=False, RBLOCK=8, XBLOCK=4, KEPT_REDUCE=False, KEPT_STORE=False)
    assert "every kept element" not in plain.source and loops(plain.source) == 4
    # the select, its per-bit sweeps, the reduction pass, the stores' pass and their pass with no
    # read (each pass past the sweeps: its whole blocks, then the last)
    assert loops(kept.source) == 5 and kept.source.count("tl.load(x_ptr") == plain.source.count("tl.load(x_ptr") == 6
    assert "algorithm-structure/reduce-kept-keys" not in plain.principle_ids
    if kind == "distinct":
        accepted(harness, path, plain.source, "default", tmp_path / "plain")


def loops(source: str) -> int:
    """Passes over the row (a row RBLOCK does not divide: its whole blocks' loop counts once)."""
    return source.count("for roffset in range(0, rnumel, RBLOCK)") + source.count(
        "for roffset in range(0, rnumel - rnumel % RBLOCK, RBLOCK)")


# stores after a select that are blind to the row below the threshold; and some that are not
KEPT_STORES = {
    "hf_warper": SPELLINGS["hf_warper"],  # the masked logits themselves: -inf below, the value above
    "fp16_scaled": "k = torch.topk(x, 4).values[:, -1:]\nreturn torch.where(x < k, 0.0, x * 3).half()",
}
TWO_ROWS = "[torch.randn(6, 37), torch.randn(6, 37)]"
NOT_BLIND = {  # name: (forward, inputs, header)
    "halved_below": ("k = torch.topk(x, 5).values[:, -1:]\nreturn torch.where(x < k, x * 0.5, x)", ROWS, ""),
    "other_tensor": ("k = torch.topk(x, 5).values[:, -1:]\nreturn x.masked_fill(x < k, 0.0) + y", TWO_ROWS,
                     "# args: x, y"),
    "threshold_scaled": ("k = torch.topk(x, 5).values[:, -1:]\nreturn x.masked_fill(x < 0.9 * k, float('-inf'))",
                         ROWS, ""),
}


# rows 4-5 (the second block of four rows) hold no NaN threshold: row 4's NaN is among its kept
# values, so that block's stores take the kept keys (a softmax's unkept elements are NaN, too)
NAN_KEPT = "[torch.randn(6, 37).index_put_((torch.tensor([4]), torch.tensor([9])), torch.tensor(float('nan')))]"
STORE_CASES = [(name, kind) for name in sorted(KEPT_STORES) for kind in ("distinct", "nan_kept")] + [
    ("gpt_fast", "nan_kept")]


@pytest.mark.parametrize(("name", "kind"), STORE_CASES, ids=[f"{n}-{k}" for n, k in STORE_CASES])
def test_stores_blind_below_the_threshold_need_no_read(name: str, kind: str, harness: Harness,
                                                      tmp_path: Path) -> None:
    """A top-k mask with no softmax (Hugging Face's warper alone) or another store that is one
    value at every unkept element is written from the kept keys and their positions, the row read
    once; rows with a NaN among their kept values judged (the first block's rows take the fast
    branch in every case: no NaN there)."""
    body = KEPT_STORES.get(name) or SPELLINGS[name]
    path = problem(tmp_path, name, body, NAN_KEPT if kind == "nan_kept" else ROW_KINDS[kind])
    c = forced(path, PERSISTENT=False, RBLOCK=8, XBLOCK=4, KEPT_STORE=True)
    assert "at a known position: the stores need no read" in c.source
    assert loops(c.source) == (5 if name == "gpt_fast" else 4)  # a softmax's max and sum: a pass of their own
    accepted(harness, path, c.source, "default", tmp_path / "stored")


def test_stores_that_see_the_unkept_values_read_the_row(tmp_path: Path) -> None:
    """A store whose value below the threshold depends on the element (halved, not masked), reads
    another tensor of the row, or compares against a function of the threshold keeps its pass, and
    offers no KEPT_STORE move."""
    for name, (body, inputs, header) in NOT_BLIND.items():
        c = forced(problem(tmp_path, name, body, inputs, header=header), PERSISTENT=False, RBLOCK=8, XBLOCK=4,
                   KEPT_STORE=True)
        assert "for roffset" in c.source and "need no read" not in c.source, name
        assert all("KEPT_STORE" not in k.config for k in c.config.kernels), name


def test_reductions_the_unkept_elements_feed_take_the_pass(tmp_path: Path) -> None:
    """A sum of the masked values themselves (-inf is not a sum's identity), a max of values not
    masked by the threshold, and a k-th smallest keep their pass over the row."""
    bodies = {
        "sum_of_masked": "k = torch.topk(x, 5).values[:, -1:]\nreturn x.masked_fill(x < k, float('-inf')).sum(-1)",
        "unmasked_max": "k = torch.topk(x, 5).values[:, -1:]\nreturn torch.softmax(x - k, dim=-1)",
        "smallest": "k = torch.topk(x, 5, largest=False).values[:, -1:]\n"
                    "return torch.softmax(x.masked_fill(x > k, float('-inf')), dim=-1)",
    }
    for name, body in bodies.items():
        c = forced(problem(tmp_path, name, body, ROWS), PERSISTENT=False, RBLOCK=8, XBLOCK=4)
        assert "for roffset" in c.source and "every kept element" not in c.source, name


def test_a_pack_switches_the_kept_key_reductions_off(harness: Harness, tmp_path: Path) -> None:
    """``order-statistic-kept-reductions`` false in a user's pack: the default render keeps the
    pass and names the pack's principle; the tuner may still try KEPT_REDUCE True."""
    path = fp16_copy("topk_sampling_logits", tmp_path)
    root = tmp_path / "house"
    root.mkdir()
    decision = {"constants": {"algorithm-structure/order-statistic-kept-reductions": False}}
    (root / "pack.yaml").write_text(yaml.safe_dump({
        "name": "house", "version": "1.0.0", "description": "Three passes.",
        "principles": [{"id": "house/three-passes", "stage": "algorithm_design", "focus": "structure",
                        "applies_to": ["reduction"], "text": "Read the row again.", "decisions": [decision]}]}))
    decisions = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    off = design_candidates(path, "odd", device="cpu", decisions=decisions)[0]
    # the reductions' pass names its kept keys "where they hold"; the stores' (on by default) add "and their positions"
    assert "kept keys where they hold" not in off.source and "house/three-passes" in off.principle_ids
    on = design_candidates(path, "odd", device="cpu")[0]
    assert "kept keys where they hold" in on.source
    assert "algorithm-structure/reduce-kept-keys" in on.principle_ids
    accepted(harness, path, off.source, "odd", tmp_path / "off")


def test_a_pack_switches_the_kept_key_stores_off(harness: Harness, tmp_path: Path) -> None:
    """``order-statistic-kept-stores`` false in a user's pack: the sampler's default render reads the
    row again to write its probabilities and names the pack's principle; the built-in default (true
    since an H100 timed it) writes them without the read, and the tuner is offered both."""
    from agents.expert.design import analyse
    from agents.expert.templates import template_for

    path = fp16_copy("topk_sampling_logits", tmp_path)
    root = tmp_path / "house"
    root.mkdir()
    decision = {"constants": {"algorithm-structure/order-statistic-kept-stores": False}}
    (root / "pack.yaml").write_text(yaml.safe_dump({
        "name": "house", "version": "1.0.0", "description": "Two reads.",
        "principles": [{"id": "house/two-reads", "stage": "algorithm_design", "focus": "structure",
                        "applies_to": ["reduction"], "text": "Read the row again.", "decisions": [decision]}]}))
    decisions = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    off = design_candidates(path, "odd", device="cpu", decisions=decisions)[0]
    assert "the stores need no read" not in off.source and "house/two-reads" in off.principle_ids
    on = design_candidates(path, "odd", device="cpu")[0]
    assert "the stores need no read" in on.source
    assert "algorithm-structure/store-kept-keys" in on.principle_ids
    kernel = next(k for k in analyse(path, "odd").variants[0].program.kernels if template_for(k).name == "reduction")
    assert template_for(kernel).tuning_space(kernel)["KEPT_STORE"] == [True, False]
    accepted(harness, path, off.source, "odd", tmp_path / "off")
    accepted(harness, path, on.source, "odd", tmp_path / "on")
