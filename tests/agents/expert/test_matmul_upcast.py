"""fp32 products of upcast 16-bit operands (ir/lower_matmul.exact_halves): where both operands of an
fp32 matmul are 16-bit values of one dtype made fp32 (``q.float() @ k.float().mT``, in the spellings
people write), the ``triton-matmul-halves`` variant multiplies the 16-bit tiles into fp32 sums, with no
fp32 copy, TF32 rounding or K-major copy of either operand; where anything is computed in fp32 after
the upcast, or the two dtypes differ, the values are fp32 and only the fp32 dots are offered. Judged on
the interpreter (which multiplies the tiles as fp32: exact products either way); the 16-bit dots
themselves in tests/agents/expert/test_gpu.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from expert_helpers import accepted, fp16_copy, offered, problem
from pack_helpers import one_rule_pack

from agents.expert.choices import decisions_for
from agents.expert.design import design_candidates
from egg.device import default_facts
from egg.evaluate.harness import Harness
from principles import load_packs

QKV = "[torch.randn(2, 3, 24, 16, dtype=torch.float16) * 1.5 for _ in range(3)]"
HEAD = "[torch.randn(6, 32, dtype=torch.float16)]"
W = "self.register_buffer('w', torch.randn(40, 32).half())"

UPCAST = {
    # name: (forward, inputs, args, init)
    # GPT-2's reorder_and_upcast_attn / an upcast attention: fp32 scores, bf16 probabilities, P @ V
    "attention_float": ("s = torch.matmul(q.float(), k.float().transpose(-2, -1)) * q.shape[-1] ** -0.5\n"
                        "return torch.softmax(s, dim=-1).to(q.dtype) @ v", QKV, "q, k, v", ""),
    "attention_to": ("s = q.to(torch.float32) @ k.to(torch.float32).mT\n"
                     "return torch.softmax(s / 4.0, dim=-1)", QKV, "q, k, v", ""),
    # an LM head computed in fp32 from fp16 hidden states and weights
    "linear_head": ("return F.linear(x.float(), self.w.float())", HEAD, "x", W),
    "einsum": ("return torch.einsum('bhqd,bhkd->bhqk', q.float(), k.float()).softmax(-1)", QKV, "q, k, v", ""),
    "baddbmm_alpha": ("z = torch.zeros(6, 24, 24, device=q.device)\n"
                      "return torch.baddbmm(z, q.flatten(0, 1).float(), k.flatten(0, 1).float().mT, beta=0, alpha=0.25)",
                      QKV, "q, k, v", ""),
    "bmm_type": ("return torch.bmm(q.flatten(0, 1).type(torch.float32), k.flatten(0, 1).float().transpose(1, 2))",
                 QKV, "q, k, v", ""),
}

FP32_VALUES = {
    # the upcast values scaled in fp32 first: no longer fp16 values
    "scaled_after_upcast": ("return (q.float() * 1.1) @ k.float().mT", QKV, "q, k, v", ""),
    # one operand fp32 to begin with
    "fp32_weight": ("return x.float() @ self.w.t()", HEAD, "x", "self.register_buffer('w', torch.randn(40, 32))"),
    # two 16-bit dtypes: no one dtype multiplies both
    "mixed_halves": ("return q.float() @ k.bfloat16().float().mT", QKV, "q, k, v", ""),
    # plain fp32 operands
    "fp32_inputs": ("return q @ k.mT", "[torch.randn(2, 3, 24, 16) for _ in range(3)]", "q, k, v", ""),
}


def _problem(tmp_path: Path, name: str, spec: tuple[str, str, str, str]) -> Path:
    forward, inputs, args, init = spec
    return problem(tmp_path, name, forward, inputs, init=init, header=f"# args: {args}")


def _first_dot(source: str) -> str:
    kernel = source[source.index("@triton.jit\ndef _egg_mat0"):]
    return re.search(r"acc = tl\.dot\(a, b, acc[^)]*\)", kernel).group(0)  # type: ignore[union-attr]


@pytest.mark.parametrize("name", sorted(UPCAST))
def test_upcast_operands_multiply_their_16_bit_values(name: str, harness: Harness, tmp_path: Path) -> None:
    path = _problem(tmp_path, name, UPCAST[name])
    variants = [c.variant for c in design_candidates(path, "default", "cpu")]
    # first of the matmul variants; the fp32 dots stay behind it, in case the judge rejects it
    assert variants.index("triton-matmul-halves") < variants.index("triton-matmul-ieee"), variants
    c = offered(path, "triton-matmul-halves")
    assert "fp32 products of float16 values on float16 tensor cores" in c.structure, c.structure
    assert "algorithm-structure/upcast-operands-in-16-bit" in c.principle_ids
    assert _first_dot(c.source) == "acc = tl.dot(a, b, acc)"  # no input_precision: a 16-bit dot on the GPU
    assert "a = a_tmp1.to(tl.float16)" in c.source and "b = b_tmp1.to(tl.float16)" in c.source
    assert "_tf32" not in c.source and "_kmajor" not in c.source
    accepted(harness, path, c.source, "default", tmp_path / "halves")


@pytest.mark.parametrize("name", sorted(FP32_VALUES))
def test_fp32_values_keep_the_fp32_dots(name: str, tmp_path: Path) -> None:
    path = _problem(tmp_path, name, FP32_VALUES[name])
    variants = [c.variant for c in design_candidates(path, "default", "cpu")]
    assert "triton-matmul-halves" not in variants and "triton-matmul-ieee" in variants, variants
    assert 'input_precision="ieee"' in offered(path, "triton-matmul-ieee").source


def test_the_packs_put_it_first_and_a_pack_switches_it_off(tmp_path: Path) -> None:
    """The built-in principle places the variant before the library matmuls (which would write the fp32
    copies) and is credited; a user's pack that turns it off leaves the fp32 dots. (Scores alone: with
    P @ V after them the chained variant goes first, test_matmul_chain.py.)"""
    path = _problem(tmp_path, "attention_to", UPCAST["attention_to"])
    builtin = decisions_for(path, load_packs([], entry_points=False), default_facts())
    first = design_candidates(path, decisions=builtin)[0]
    assert first.variant == "triton-matmul-halves"
    assert "algorithm-structure/upcast-operands-in-16-bit" in first.principle_ids
    root = one_rule_pack(tmp_path, "house/fp32-dots", ["matmul"], {"variants": {"triton-matmul-halves": {"enabled": False}}})
    off = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    variants = [c.variant for c in design_candidates(path, decisions=off)]
    assert "triton-matmul-halves" not in variants and "triton-matmul-ieee" in variants, variants


GPT2_UPCAST = """import torch
import torch.nn as nn
from transformers import GPT2Config
from transformers.models.gpt2.modeling_gpt2 import GPT2Attention


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = GPT2Config(n_embd=64, n_head=4, reorder_and_upcast_attn=True, attn_pdrop=0.0)
        self.attn = GPT2Attention(config, layer_idx=0).eval()

    def forward(self, q, k, v):
        return self.attn._upcast_and_reordered_attn(q, k, v)[0]


def get_inputs():
    return [torch.randn(2, 4, 24, 16).half() * 1.5 for _ in range(3)]


def get_init_inputs():
    return []
"""


def test_transformers_gpt2_upcast_attention(harness: Harness, tmp_path: Path) -> None:
    """transformers' own GPT-2 ``_upcast_and_reordered_attn`` (``reorder_and_upcast_attn=True``: an
    empty fp32 buffer, ``baddbmm(beta=0, alpha=scale)`` of ``q.float()`` and a reshaped transposed
    ``k.float()``, fp32 softmax, ``.type(value.dtype)``, matmul with v) multiplies the fp16 values."""
    path = tmp_path / "gpt2_upcast_attention.py"
    path.write_text(GPT2_UPCAST)
    c = offered(path, "triton-matmul-halves")
    assert "fp32 products of float16 values on float16 tensor cores" in c.structure, c.structure
    accepted(harness, path, c.source, "default", tmp_path / "halves")


def test_the_short_sequence_attention_workload_at_odd_sizes(harness: Harness, tmp_path: Path) -> None:
    """workloads/short_seq_attention.py's ``odd`` set in fp16 (197 tokens, head_dim 80: K and N tiles
    end partial, masked): the 16-bit score GEMM with its softmax epilogue, then P @ V; the fp32
    ``small`` set, where the casts are no-ops, keeps the fused variant, and the file says so."""
    path = fp16_copy("short_seq_attention", tmp_path)
    c = offered(path, "triton-matmul-halves", "odd")
    assert c.structure.startswith("Triton bmm and a 1-output epilogue with 2 row reduction(s) over its tiles, "
                                  "fp32 products of float16 values on float16 tensor cores; Triton bmm"), c.structure
    assert "triton-matmul-halves does not apply there" in c.structure
    accepted(harness, path, c.source, "odd", tmp_path / "odd")
