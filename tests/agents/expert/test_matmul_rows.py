"""A GEMM's rows longer than one tile (schedule.Policy.row_passes, templates/matmul_rows.py): in the
``triton-matmul-chained`` variant the row reductions of its epilogue and a chained second GEMM stay in
its kernel as passes over N, each recomputing the GEMM's tile (flash attention in two passes: the
scores and the probabilities never written). Attention at more than 256 keys in the spellings people
write (nanoGPT's slow path, transformers' eager attention with its additive mask), an MLP with a wide
hidden size (one pass, no reduction), a row max returned beside the output; judged on the interpreter
(fp16/fp32: its bf16 arithmetic is wrong); the GPU render in test_gpu.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from expert_helpers import accepted, launches, offered, problem
from pack_helpers import one_rule_pack

from agents.expert.choices import decisions_for
from agents.expert.design import design_candidates
from agents.expert.ir.expr import Const, IndexValue, Load, Op, Ref
from agents.expert.ir.index import Affine, Var
from agents.expert.templates.matmul_rows import dead_block
from egg.device import default_facts
from egg.evaluate.harness import Harness
from principles import load_packs

QKV = "[torch.randn(1, 2, 300, 16, dtype=torch.float16) * 1.5 for _ in range(3)]"
QKV32 = "[torch.randn(1, 2, 260, 16) for _ in range(3)]"
ODD = "[torch.randn(1, 2, 270, 20, dtype=torch.float16) * 1.5 for _ in range(3)]"
TRIL = "self.register_buffer('bias', torch.tril(torch.ones(260, 260)).view(1, 1, 260, 260))"
HF_MASK = ("[*(torch.randn(1, 2, 300, 16, dtype=torch.float16) for _ in range(3)), torch.zeros(300, 300, "
           "dtype=torch.float16).masked_fill(~torch.ones(300, 300, dtype=torch.bool).tril(), "
           "torch.finfo(torch.float16).min)[None, None].contiguous()]")

PASSES = {
    # name: (forward, inputs, args, init, passes over N)
    "softmax_fp16": ("p = torch.softmax(q @ k.mT * 0.25, -1)\nreturn p @ v", QKV, "q, k, v", "", 1),
    # nanoGPT's slow path: a registered tril buffer sliced to T, masked_fill with -inf, fp32 (ieee dots)
    "nanogpt_tril": ("T = q.size(-2)\natt = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))\n"
                     "att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))\n"
                     "return F.softmax(att, dim=-1) @ v", QKV32, "q, k, v", TRIL, 1),
    # transformers' eager attention: an additive mask, the softmax in fp32 cast back
    "hf_additive": ("w = torch.matmul(q, k.transpose(2, 3)) * 0.25 + mask\n"
                    "w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)\nreturn torch.matmul(w, v)",
                    HF_MASK, "q, k, v, mask", "", 1),
    # both tiles masked (270 keys, head_dim 20), upcast scores
    "odd_sizes": ("s = torch.matmul(q.float(), k.float().mT) * 0.2\n"
                  "return torch.softmax(s, dim=-1).to(q.dtype) @ v", ODD, "q, k, v", "", 1),
    # the probabilities returned too: stored by the second pass beside the chained dot
    "probs_returned": ("p = torch.softmax(q.float() @ k.float().mT * 0.25, -1).half()\nreturn p @ v, p",
                       QKV, "q, k, v", "", 2),
    # a softmax written out by hand, its row max returned: a row store after the first pass
    "max_returned": ("s = q.float() @ k.float().mT * 0.25\nm = s.amax(-1, keepdim=True)\ne = torch.exp(s - m)\n"
                     "return (e / e.sum(-1, keepdim=True)).half() @ v, m", QKV, "q, k, v", "", 1),
    # an MLP with a hidden size of 600: no reduction, one pass accumulating the second GEMM's K
    "wide_mlp": ("return torch.relu(x @ self.w1.t() + self.b1) @ self.w2.t()", "[torch.randn(37, 40)]", "x",
                 "self.register_buffer('w1', torch.randn(600, 40) * 0.2)\n"
                 "self.register_buffer('b1', torch.randn(600))\n"
                 "self.register_buffer('w2', torch.randn(24, 600) * 0.05)", 1),
}


def _problem(tmp_path: Path, name: str) -> Path:
    forward, inputs, args, init, _ = PASSES[name]
    return problem(tmp_path, name, forward, inputs, init=init, header=f"import math\n# args: {args}")


@pytest.mark.parametrize("name", sorted(PASSES))
def test_long_rows_take_passes_over_n_in_one_kernel(name: str, harness: Harness, tmp_path: Path) -> None:
    path = _problem(tmp_path, name)
    c = offered(path, "triton-matmul-chained")
    assert " over N of " in c.structure and "chained on the tile" in c.structure, c.structure
    assert {"algorithm-structure/long-rows-in-passes", "algorithm-structure/chain-gemms-in-registers"} <= \
        set(c.principle_ids), c.principle_ids
    passes = PASSES[name][4]
    assert c.source.count("for n0 in range(0, N, BLOCK_N):") == passes, c.source
    assert f"# pass {passes} of {passes} over N" in c.source
    # the second GEMM's dot accumulates over the last pass's blocks
    assert "acc2 = tl.dot(p2, b2, acc2" in c.source or "acc2 = tl.dot(p2.to(tl.float32), b2.to(tl.float32), acc2)" \
        in c.source
    unchained = [x for x in design_candidates(path, "default", "cpu") if x.variant.startswith("triton-matmul")
                 and x.variant != "triton-matmul-chained"]
    assert unchained and all(x.kernels > c.kernels for x in unchained), [(x.variant, x.kernels) for x in unchained]
    verdict = accepted(harness, path, c.source, "default", tmp_path / "passes")
    assert launches(verdict) == c.kernels == 1, (launches(verdict), c.kernels, c.structure)


def test_attention_is_one_pass_unless_a_store_needs_the_row_sum(tmp_path: Path) -> None:
    """softmax(s) @ v: one pass (flash attention): the online max and sum, the dot of the unnormalised
    terms rescaled as the sum is, divided by the sum after the pass. With the probabilities also
    returned, their stores need the row's final sum: a second pass (the first one still online)."""
    one = offered(_problem(tmp_path, "softmax_fp16"), "triton-matmul-chained").source
    assert "# pass 1 of 1 over N" in one and "acc2 = acc2 * " in one and "acc2 = acc2 / " in one, one
    two = offered(_problem(tmp_path, "probs_returned"), "triton-matmul-chained").source
    first = two.split("# pass 1 of 2 over N")[1].split("# pass 2 of 2")[0]
    assert "tl.exp(" in first and "_egg_max_nan(" in first and "tl.dot(p2" not in first, first
    assert "acc2 = acc2 * " not in two and "acc2 = acc2 / " not in two


def test_rows_that_fit_one_tile_keep_one_tile(tmp_path: Path) -> None:
    """At 256 keys the row is one tile: no passes (the chained render of the eighteenth session)."""
    path = problem(tmp_path, "short", "p = torch.softmax(q @ k.mT * 0.25, -1)\nreturn p @ v",
                   "[torch.randn(1, 2, 256, 16, dtype=torch.float16) for _ in range(3)]", header="# args: q, k, v")
    c = offered(path, "triton-matmul-chained")
    assert "for n0 in range" not in c.source and " over N of " not in c.structure, c.structure


def test_the_other_variants_do_not_take_passes(tmp_path: Path) -> None:
    """Passes over N are the chained variant's (the policy's row_passes): the unchained Triton GEMM of
    a 300-key softmax writes its scores and leaves the softmax to a reduction kernel."""
    path = _problem(tmp_path, "softmax_fp16")
    c = offered(path, "triton-matmul")
    assert "for n0 in range" not in c.source and c.kernels >= 2, c.structure


# -- blocks the mask removes (matmul_rows.dead_block) ------------------------------------------------

# causal, additive, fp32's finfo.min; the first 40 rows masked everywhere (a padded query: eager's
# uniform average of v, which the skip must leave to the computed blocks)
ADDITIVE32 = ("[*(torch.randn(1, 1, 300, 16) for _ in range(3)), torch.zeros(300, 300).masked_fill("
              "~torch.ones(300, 300, dtype=torch.bool).tril() | (torch.arange(300)[:, None] < 40), "
              "torch.finfo(torch.float32).min)[None, None].contiguous()]")
MASKED = {
    # name: (forward, inputs, args, init)
    "tril_buffer": PASSES["nanogpt_tril"][:4],  # where(bias == 0, -inf, s): a loaded condition
    "additive_finfo_min": ("w = torch.matmul(q, k.transpose(2, 3)) * 0.25 + mask\n"
                           "return torch.matmul(F.softmax(w, dim=-1), v)", ADDITIVE32, "q, k, v, mask", ""),
    # a triu of index comparisons built in the forward (ALiBi's, MPT's spelling)
    "triu_in_forward": ("T = q.size(-2)\ncausal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=q.device), 1)\n"
                        "att = (q @ k.mT * 0.25).masked_fill(causal, float('-inf'))\nreturn att.softmax(-1) @ v",
                        QKV32, "q, k, v", ""),
    # a keep-mask: where(keep, s, -inf) (transformers' sdpa-mask utilities' boolean form)
    "keep_mask": ("return torch.where(keep, q @ k.mT * 0.25, float('-inf')).softmax(-1) @ v",
                  "[*(torch.randn(1, 2, 260, 16) for _ in range(3)), torch.ones(260, 260, dtype=torch.bool).tril()]",
                  "q, k, v, keep", ""),
}


def _masked(tmp_path: Path, name: str) -> Path:
    forward, inputs, args, init = MASKED[name]
    return problem(tmp_path, name, forward, inputs, init=init, header=f"import math\n# args: {args}")


@pytest.mark.parametrize("name", sorted(MASKED))
def test_key_blocks_the_mask_removes_are_skipped_and_the_result_is_eagers(name: str, harness: Harness,
                                                                          tmp_path: Path) -> None:
    path = _masked(tmp_path, name)
    c = offered(path, "triton-matmul-chained")
    assert "key blocks the mask removes skipped" in c.structure, c.structure
    assert "algorithm-structure/skip-masked-blocks" in c.principle_ids, c.principle_ids
    # a pre-pass over the mask alone bounds the pass's loop over N; no branch inside the pass (a branch
    # there kept Triton from pipelining the loop)
    prepass, rest = c.source.split("# the live key blocks' bounds")[1].split("# pass 1 of 1 over N")
    assert "for n0 in range(0, N, BLOCK_N):" in prepass and "tl.dot(" not in prepass, prepass
    assert re.search(r"for n0 in range\(e__lo\d+, e__hi\d+, BLOCK_N\):", rest), rest
    assert "        if " not in rest.split("for n0 in range(")[1], rest
    accepted(harness, path, c.source, "default", tmp_path / "skip")


def _run(source: str, where: Path, *args):
    import importlib.util

    where.mkdir(parents=True, exist_ok=True)
    (where / "cand.py").write_text(source)
    spec = importlib.util.spec_from_file_location(f"skip_{where.name}", where / "cand.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.ModelNew(*[]).forward(*args)


def test_a_skipped_block_reads_neither_its_keys_nor_its_values_and_a_pack_turns_the_skip_off(tmp_path: Path) -> None:
    """The skip is real: an inf in the last key's value row makes eager's P @ V NaN on every row (0 x
    inf), while the rows whose blocks never reach that key are finite: their block was not computed.
    The constant false (a user who wants eager's NaN propagation from masked keys) computes every
    block, and the draft names the user's rule."""
    import torch

    path = _masked(tmp_path, "keep_mask")
    q, k, v = (torch.randn(1, 2, 260, 16) for _ in range(3))
    v[..., -1, :] = float("inf")
    keep = torch.ones(260, 260, dtype=torch.bool).tril()
    eager = torch.where(keep, q @ k.mT * 0.25, float("-inf")).softmax(-1) @ v
    assert torch.isnan(eager[..., :-1, :]).all()
    out = _run(offered(path, "triton-matmul-chained").source, tmp_path / "on", q, k, v, keep)
    assert torch.isfinite(out[..., :16, :]).all() and torch.isnan(out[..., 258, :]).all()
    root = one_rule_pack(tmp_path, "house/eager-nans", ["matmul"],
                         {"constants": {"algorithm-structure/skip-masked-blocks": False}})
    decisions = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    off = next(c for c in design_candidates(path, "default", "cpu", decisions=decisions)
               if c.variant == "triton-matmul-chained")
    assert "key blocks the mask removes skipped" not in off.structure and "house/eager-nans" in off.principle_ids
    assert torch.isnan(_run(off.source, tmp_path / "off", q, k, v, keep)[..., :-1, :]).all()


def test_what_tells_a_dead_block_and_what_does_not() -> None:
    """dead_block on the softmax input's spellings: an additive mask (either side of the add, under
    casts), where with -inf or finfo.min in either branch; not a mask that reads the scores, a
    multiplicative one, a bound above -1e30 (fp16's finfo.min) or a where choosing between scores."""
    i, j = Var("i", 300), Var("j", 300)
    s = Op("mul", (Ref("bmm", "float32"), Const(0.25, "float32")), "float32")
    mask = Load("mask", Affine.of(i) * 300 + Affine.of(j), "float32")
    cond = Op("gt", (IndexValue(Affine.of(j)), IndexValue(Affine.of(i))), "bool")
    add = dead_block(Op("to", (Op("add", (mask, s), "float32"),), "bfloat16"), "bmm")
    assert add is not None and add.kind == "add" and add.mask is mask and add.seen
    fill = dead_block(Op("where", (cond, Const(float("-inf"), "float32"), s), "float32"), "bmm")
    assert fill is not None and fill.kind == "all" and fill.mask is cond and not fill.seen  # exact without a score
    keep = dead_block(Op("where", (cond, s, Const(-3.4028234663852886e38, "float32")), "float32"), "bmm")
    assert keep is not None and keep.kind == "none" and keep.seen  # finfo.min: the row must have seen a score
    assert dead_block(Op("add", (s, Op("mul", (mask, Ref("bmm", "float32")), "float32")), "float32"), "bmm") is None
    assert dead_block(Op("mul", (s, mask), "float32"), "bmm") is None
    assert dead_block(Op("where", (cond, Const(-65504.0, "float16"), s), "float32"), "bmm") is None
    assert dead_block(Op("where", (cond, s, Op("neg", (s,), "float32")), "float32"), "bmm") is None


def test_a_short_k_is_one_step_a_block_on_the_gpu_unless_a_pack_says_otherwise(tmp_path: Path) -> None:
    """Passes over N take a block's whole K (the head dim, up to the pack's constant) in one step with
    two stages on the GPU, so Triton pipelines the loop over N; a pack setting the constant to 0 keeps
    the K loop (the default's BLOCK_K); the interpreter's render is unchanged."""
    path = _masked(tmp_path, "keep_mask")  # K = 16
    c = offered(path, "triton-matmul-chained", device="cuda")
    cfg = c.config.kernels[0].config
    assert cfg["BLOCK_K"] == 16 and cfg["num_stages"] == 2, cfg
    root = one_rule_pack(tmp_path, "house/k-loop", ["matmul"],
                         {"constants": {"algorithm-structure/passes-whole-k-max": 0}})
    decisions = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    kept = next(x for x in design_candidates(path, "default", "cuda", decisions=decisions)
                if x.variant == "triton-matmul-chained")
    assert kept.config.kernels[0].config["BLOCK_K"] == 32 and kept.config.kernels[0].config["num_stages"] == 3
    assert "house/k-loop" in kept.principle_ids
