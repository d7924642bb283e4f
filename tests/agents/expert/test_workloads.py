"""The shipped workloads through the new codegen and the real judge, on CPU.

``KERNELS`` is the generated-kernel launches per forward of the default (``fused``) candidate at
the ``small`` shape set, and ``BEFORE`` what the fx-based codegen this one replaces launched (its
own launch count, from its templates: the setitem template ran a copy and a scatter kernel per
cache, the loss template a row kernel and a one-program total): nothing may launch more than it.
The ``odd`` shape sets run bf16 workloads as fp16 copies (the interpreter's bf16 math is wrong).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from expert_helpers import WORKLOADS, accepted, check, fp16_copy, launches

from agents.expert.design import design_candidates
from egg.evaluate.harness import Harness

KERNELS = {
    "adamw_step": 1,  # three outputs and the fp64 bias corrections (scalars per program) in one pass
    "causal_softmax": 1,  # the mask is index arithmetic inside the softmax kernel
    "cross_entropy_large_vocab": 2,  # row logsumexp + target gather, then the mean over rows
    "gelu_mlp": 1,  # cuBLAS addmm x2, the gelu between them
    "int8_weight_only_linear": 1,  # the GEMM dequantises each int8 B tile (no dequantised weight)
    "int4_weight_only_linear": 1,  # the GEMM unpacks and dequantises each int4 B tile (masks, shifts, groups)
    "kv_cache_append": 2,  # both cache copies in one launch, both scatters in another
    "residual_layer_norm": 1,  # the residual sum, its statistics and the norm in one kernel
    "rms_norm": 1,
    "rotary_embedding": 1,  # q and k in one launch; rotate_half's slices and cat are index maps
    "short_seq_attention": 1,  # cuBLAS bmm x2; scale + softmax (fp32 casts are no-ops at small)
    "swiglu": 1,  # chunk is two views
    "swiglu_mlp": 1,  # cuBLAS mm x3, silu(g) * u between them
    "topk_sampling_logits": 1,  # the k-th largest (no sort), the mask and the softmax: one kernel
}
BEFORE = {"adamw_step": 1, "causal_softmax": 1, "cross_entropy_large_vocab": 2, "gelu_mlp": 1,
          "int8_weight_only_linear": 1, "kv_cache_append": 4, "residual_layer_norm": 1, "rms_norm": 1,
          "rotary_embedding": 1, "short_seq_attention": 3, "swiglu": 1, "swiglu_mlp": 1, "topk_sampling_logits": 2}
TORCH_OPS = {"gelu_mlp": ["aten.addmm"], "short_seq_attention": ["aten.bmm"], "swiglu_mlp": ["aten.mm"]}
MATMULS = {"gelu_mlp", "int8_weight_only_linear", "int4_weight_only_linear", "short_seq_attention", "swiglu_mlp"}


def test_the_table_covers_every_workload() -> None:
    names = sorted(p.stem for p in WORKLOADS.glob("*.py") if p.stem != "__init__")
    assert sorted(KERNELS) == names
    assert all(KERNELS[n] <= BEFORE[n] for n in BEFORE)  # workloads added since have no "before"


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_variant_accepted_at_small(name: str, harness: Harness, tmp_path: Path) -> None:
    check(harness, WORKLOADS / f"{name}.py", tmp_path, "small", kernels=KERNELS[name],
          torch_ops=TORCH_OPS.get(name, []), every_variant=True)


@pytest.mark.parametrize("name", sorted(set(KERNELS) - MATMULS))
def test_default_candidate_accepted_at_odd_shapes(name: str, harness: Harness, tmp_path: Path) -> None:
    """Non-power-of-2 rows, 16-bit inputs, long rows (cross-entropy's 50257-wide vocabulary takes
    the looped reduction with the online logsumexp)."""
    path = fp16_copy(name, tmp_path) if name != "adamw_step" else WORKLOADS / f"{name}.py"
    c = design_candidates(path, "odd", "cpu")[0]
    verdict = accepted(harness, path, c.source, "odd", tmp_path / "odd")
    assert launches(verdict) == c.kernels <= BEFORE[name]


def test_long_rows_are_looped_with_online_softmax(tmp_path: Path) -> None:
    path = fp16_copy("cross_entropy_large_vocab", tmp_path)
    source = design_candidates(path, "odd", "cpu")[0].source
    assert "for roffset in range(0, rnumel" in source
    # one kernel per declared shape set; in each, max and sum of exp in one pass (a pass over a row
    # RBLOCK does not divide is two loops: the whole blocks, then the last), the gather per row
    kernels = source.split("@triton.jit")[1:]
    assert kernels and all(k.count("over the reduced extent") <= 1 for k in kernels)
