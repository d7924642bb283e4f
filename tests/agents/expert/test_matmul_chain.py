"""Chained GEMMs (schedule.Policy.chain_gemms, templates/matmul_chain.py): where a GEMM's A operand is
another GEMM's row-tile epilogue (attention written by hand, in the spellings people write; an MLP with
a short hidden size), the ``triton-matmul-chained`` variant runs both in one kernel and never writes the
intermediate; where the second GEMM reads anything but the lane the first one computed (a transposed
intermediate, the intermediate as its B operand), no chain is formed (rows longer than one tile take
passes over N: test_matmul_rows.py).
Judged on the interpreter (fp16/fp32: its bf16 arithmetic is wrong); the GPU render in test_gpu.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from expert_helpers import accepted, launches, offered, problem
from pack_helpers import one_rule_pack

from agents.expert.choices import decisions_for
from agents.expert.design import design_candidates
from egg.device import default_facts
from egg.evaluate.harness import Harness
from principles import load_packs

QKV = "[torch.randn(2, 3, 24, 16, dtype=torch.float16) * 1.5 for _ in range(3)]"
ODD = "[torch.randn(2, 3, 23, 20, dtype=torch.float16) * 1.5 for _ in range(3)]"
CAUSAL = "self.register_buffer('causal', torch.ones(24, 24, dtype=torch.bool).tril())"

CHAINS = {
    # name: (forward, inputs, args, init)
    "upcast": ("s = torch.matmul(q.float(), k.float().transpose(-2, -1)) * q.shape[-1] ** -0.5\n"
               "return torch.softmax(s, dim=-1).to(q.dtype) @ v", QKV, "q, k, v", ""),
    "fp16_scores": ("s = q @ k.transpose(-1, -2) / 4.0\nreturn s.softmax(-1) @ v", QKV, "q, k, v", ""),
    "einsum": ("s = torch.einsum('bhqd,bhkd->bhqk', q, k) * 0.25\n"
               "return torch.einsum('bhqk,bhkd->bhqd', F.softmax(s.float(), dim=-1).half(), v)", QKV, "q, k, v", ""),
    "bmm_flat": ("q, k, v = q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1)\n"
                 "return torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.25, -1), v)", QKV, "q, k, v", ""),
    "causal_mask": ("s = (q @ k.mT).float() * 0.25\ns = s.masked_fill(~self.causal, float('-inf'))\n"
                    "return (torch.softmax(s, -1).to(v.dtype) @ v).transpose(1, 2).reshape(2, 24, 48)",
                    QKV, "q, k, v", CAUSAL),
    "odd_sizes": ("s = torch.matmul(q.float(), k.float().mT) * 0.2\n"
                  "return torch.softmax(s, dim=-1).to(q.dtype) @ v", ODD, "q, k, v", ""),
    # the probabilities returned too: stored by the first stage, P @ V from registers all the same
    "probs_returned": ("p = torch.softmax(q.float() @ k.float().mT * 0.25, -1).half()\nreturn p @ v, p",
                       QKV, "q, k, v", ""),
    # the second GEMM's own epilogue: a residual and a scale over its output
    "second_epilogue": ("p = torch.softmax(q.float() @ k.float().mT * 0.25, -1).half()\nreturn (p @ v) * 0.5 + q",
                        QKV, "q, k, v", ""),
    # baddbmm: the second GEMM's bias (beta) and alpha in its epilogue
    "baddbmm_bias": ("p = torch.softmax(torch.bmm(q.flatten(0, 1), k.flatten(0, 1).mT).float() * 0.25, -1).half()\n"
                     "return torch.baddbmm(v.flatten(0, 1), p, v.flatten(0, 1), beta=0.5, alpha=2.0)", QKV, "q, k, v", ""),
    # an int8 weight-only second linear: the dequantised weight is the chained GEMM's B operand
    "int8_second_weight": ("h = torch.relu(x @ self.w1.t())\nreturn h @ (self.w2.float() * self.s[:, None]).t()",
                           "[torch.randn(37, 40)]", "x",
                           "self.register_buffer('w1', torch.randn(48, 40) * 0.2)\n"
                           "self.register_buffer('w2', torch.randint(-127, 128, (24, 48), dtype=torch.int8))\n"
                           "self.register_buffer('s', torch.rand(24) * 0.01)"),
    # an MLP with a short hidden size, fp32 (ieee dots), both weights transposed views
    "mlp_fp32": ("return torch.relu(x @ self.w1.t() + self.b1) @ self.w2.t()", "[torch.randn(37, 40)]", "x",
                 "self.register_buffer('w1', torch.randn(48, 40) * 0.2)\n"
                 "self.register_buffer('b1', torch.randn(48))\n"
                 "self.register_buffer('w2', torch.randn(24, 48) * 0.2)"),
}

NOT_CHAINS = {
    # the second GEMM reads the intermediate transposed: not the lane that computed it
    "transposed_probs": ("p = torch.softmax(q @ k.mT * 0.25, -1)\nreturn p.mT @ v", QKV, "q, k, v", ""),
    # the intermediate as the second GEMM's B operand
    "probs_as_b": ("p = torch.softmax(q @ k.mT * 0.25, -1)\nreturn p @ p", QKV, "q, k, v", ""),
}


def _problem(tmp_path: Path, name: str, spec: tuple[str, str, str, str]) -> Path:
    forward, inputs, args, init = spec
    return problem(tmp_path, name, forward, inputs, init=init, header=f"# args: {args}")


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chained_gemms_run_in_one_kernel(name: str, harness: Harness, tmp_path: Path) -> None:
    path = _problem(tmp_path, name, CHAINS[name])
    c = offered(path, "triton-matmul-chained")
    assert "chained on the tile (its A operand never written)" in c.structure, c.structure
    assert "algorithm-structure/chain-gemms-in-registers" in c.principle_ids
    assert "acc2 = tl.dot(p2, b2" in c.source
    unchained = [x for x in design_candidates(path, "default", "cpu") if x.variant.startswith("triton-matmul")
                 and x.variant != "triton-matmul-chained"]
    assert unchained and all(x.kernels > c.kernels for x in unchained), [(x.variant, x.kernels) for x in unchained]
    verdict = accepted(harness, path, c.source, "default", tmp_path / "chained")
    assert launches(verdict) == c.kernels, (launches(verdict), c.kernels, c.structure)


@pytest.mark.parametrize("name", sorted(NOT_CHAINS))
def test_no_chain_where_the_tile_does_not_hold_the_operand(name: str, tmp_path: Path) -> None:
    path = _problem(tmp_path, name, NOT_CHAINS[name])
    variants = [c.variant for c in design_candidates(path, "default", "cpu")]
    assert "triton-matmul-chained" not in variants and any(v.startswith("triton-matmul") for v in variants), variants


def test_the_attention_workload_is_one_launch(harness: Harness, tmp_path: Path) -> None:
    """workloads/short_seq_attention.py (upcast scores, fp32 softmax, bf16 probabilities) at its ``odd``
    sizes in fp16 (197 tokens, head_dim 80: both tiles masked): one launch, judged."""
    from expert_helpers import fp16_copy

    path = fp16_copy("short_seq_attention", tmp_path)
    c = offered(path, "triton-matmul-chained", "odd")
    assert c.kernels == 1, c.structure
    verdict = accepted(harness, path, c.source, "odd", tmp_path / "chained")
    assert launches(verdict) == 1


def test_a_pack_puts_it_first_or_switches_it_off(tmp_path: Path) -> None:
    """Built in, the chained variant follows the library-call variant (it makes every GEMM a Triton
    GEMM); a user's pack that raises its priority puts it first and is credited; one that turns it off
    leaves the unchained GEMMs."""
    path = _problem(tmp_path, "upcast", CHAINS["upcast"])
    builtin = [c.variant for c in design_candidates(path, decisions=decisions_for(
        path, load_packs([], entry_points=False), default_facts()))]
    assert builtin.index("fused") < builtin.index("triton-matmul-chained"), builtin
    first = one_rule_pack(tmp_path, "house/chain-first", ["matmul"], {"variants": {"triton-matmul-chained": {"priority": 9}}})
    cands = design_candidates(path, decisions=decisions_for(path, load_packs([first], entry_points=False), default_facts()))
    assert cands[0].variant == "triton-matmul-chained"
    assert "house/chain-first" in cands[0].principle_ids and "algorithm-structure/chain-gemms-in-registers" in \
        cands[0].principle_ids
    root = one_rule_pack(tmp_path, "house/unchained", ["matmul"], {"variants": {"triton-matmul-chained": {"enabled": False}}})
    off = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    variants = [c.variant for c in design_candidates(path, decisions=off)]
    assert "triton-matmul-chained" not in variants and "triton-matmul-halves" in variants, variants


LLAMA_EAGER = """import torch
import torch.nn as nn
from transformers.models.llama.modeling_llama import eager_attention_forward


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_key_value_groups = 2  # grouped-query attention: repeat_kv expands k and v

    def forward(self, q, k, v, mask):
        return eager_attention_forward(self, q, k, v, mask, scaling=0.25)


def get_inputs():
    q = torch.randn(2, 4, 24, 16, dtype=torch.float16) * 1.5
    kv = [torch.randn(2, 2, 24, 16, dtype=torch.float16) * 1.5 for _ in range(2)]
    mask = torch.full((1, 1, 24, 24), float("-inf"), dtype=torch.float16).triu(1)
    return [q, *kv, mask]


def get_init_inputs():
    return []
"""


def test_transformers_eager_attention(harness: Harness, tmp_path: Path) -> None:
    """transformers' own ``eager_attention_forward`` (LLaMA's, as every ``attn_implementation="eager"``
    model runs it): repeat_kv's expanded k and v, an additive causal mask, an fp32 softmax cast back,
    dropout at p=0, the probabilities returned beside the output: P @ V on the tile all the same."""
    path = tmp_path / "llama_eager_attention.py"
    path.write_text(LLAMA_EAGER)
    c = offered(path, "triton-matmul-chained")
    assert "chained on the tile" in c.structure, c.structure
    verdict = accepted(harness, path, c.source, "default", tmp_path / "chained")
    assert launches(verdict) == c.kernels


WIDE_MLP = ("return torch.relu(x @ self.w1.t()) @ self.w2.t()", "[torch.randn(8192, 512, dtype=torch.float16)]", "x",
            "self.register_buffer('w1', torch.randn(256, 512).half() * 0.05)\n"
            "self.register_buffer('w2', torch.randn(256, 256).half() * 0.05)")


def test_the_accumulator_budget_is_a_pack_constant(tmp_path: Path) -> None:
    """Two fp32 accumulators, 128 x 256 and 128 x 256 on 8 warps, pass the built-in 160 elements a
    thread (that render spills on sm_90a): the GPU render halves BLOCK_M and credits the constant's
    principle; a pack that raises the budget keeps 128 rows; a tuning move's BLOCK_M stands."""
    from agents.expert.design import analyse, read_config, render

    path = _problem(tmp_path, "wide_mlp", WIDE_MLP)

    def block_m(decisions: object = None, given: dict | None = None) -> int:
        if given is None:
            c = next(c for c in design_candidates(path, "default", "cuda", decisions=decisions)
                     if c.variant == "triton-matmul-chained")
        else:
            program = analyse(path, "default")
            variant = program.variant("triton-matmul-chained")
            c = render(program, variant, "cuda", {k.name: given for k in variant.program.kernels})
        cfg = read_config(c.source)
        assert cfg is not None
        return int(cfg.kernels[0].config["BLOCK_M"])

    assert block_m() == 64
    wide = one_rule_pack(tmp_path, "house/wide", ["matmul"],
                         {"constants": {"algorithm-structure/chain-accumulators-per-thread": 512}})
    assert block_m(decisions_for(path, load_packs([wide], entry_points=False), default_facts())) == 128
    assert block_m(given={"BLOCK_M": 128}) == 128
