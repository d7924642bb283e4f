"""The template contract: a fixed list (a template that fails to import is an error, never
skipped), one template per kernel kind, jinja2 sources that render, and the H200 heuristics
(checked without a GPU) the tuner starts from."""

from __future__ import annotations

from pathlib import Path

from expert_helpers import WORKLOADS

from agents.expert.design import analyse
from agents.expert.templates import all_templates, template_for
from agents.expert.tuning import focus_of
from egg.vocabulary import Focus

TEMPLATE_DIR = Path(__file__).resolve().parents[3] / "agents" / "expert" / "templates"


def test_every_template_imports_and_has_its_jinja_source() -> None:
    names = [t.name for t in all_templates()]
    assert names == ["pointwise", "reduction", "scan", "matmul", "scatter"]
    for family in ("pointwise", "reduction", "scan", "matmul", "launcher"):
        assert (TEMPLATE_DIR / f"{family}.py.j2").is_file()


def test_each_kernel_has_exactly_one_template() -> None:
    for name in ("rms_norm", "kv_cache_append", "rotary_embedding", "int8_weight_only_linear"):
        program = analyse(WORKLOADS / f"{name}.py", "small")
        for variant in program.variants:
            for kernel in variant.program.kernels:
                fits = [t.name for t in all_templates() if t.applies(kernel) is None]
                assert fits == [template_for(kernel).name], (kernel.name, fits)


def _kernel(workload: str, shape_set: str = "default", kind: str = "reduction"):  # type: ignore[no-untyped-def]
    program = analyse(WORKLOADS / f"{workload}.py", shape_set)
    return next(k for k in program.variants[0].program.kernels if k.kind == kind)


def test_gpu_defaults_keep_llama_rows_in_registers() -> None:
    """RMSNorm at 8192 x 4096: one row per RBLOCK of 4096, persistent, enough warps."""
    k = _kernel("rms_norm")
    cfg = template_for(k).default_config(k, "cuda")
    assert cfg["PERSISTENT"] and cfg["RBLOCK"] == 4096 and cfg["num_warps"] >= 8


def test_gpu_defaults_loop_over_a_large_vocabulary() -> None:
    """Cross-entropy over 128256 logits: a looped reduction (the online logsumexp), not registers."""
    k = _kernel("cross_entropy_large_vocab")
    cfg = template_for(k).default_config(k, "cuda")
    assert not cfg["PERSISTENT"] and cfg["RBLOCK"] <= 4096


def test_an_online_softmax_offers_a_running_max_per_lane_to_the_mapping_search(tmp_path: Path) -> None:
    """Cross-entropy's looped logsumexp: ONLINE_MAX is a parallel-mapping parameter ("lane" by default,
    "row" the move); the lane render has no chunk max in its loop. logsumexp's guarded max
    (``where(|m| == inf, 0, m)``) is not offered: the lane rescale is exact only for ``f - m``."""
    from expert_helpers import problem

    from agents.expert.choices import choices_for
    from agents.expert.design import design_candidates, read_config
    from agents.expert.tuning import moves

    k = _kernel("cross_entropy_large_vocab")
    t = template_for(k)
    assert t.tuning_space(k)["ONLINE_MAX"] == ["lane", "row"] and t.default_config(k, "cuda")["ONLINE_MAX"] == "lane"
    assert focus_of("ONLINE_MAX") is Focus.PARALLEL_MAPPING
    program = analyse(WORKLOADS / "cross_entropy_large_vocab.py")
    variant = program.variants[0]
    found = [m for m in moves(variant, {}, Focus.PARALLEL_MAPPING, choices_for("cuda")) if m.param == "ONLINE_MAX"]
    assert [(m.old, m.new) for m in found] == [("lane", "row")]
    lse = problem(tmp_path, "lse", "return torch.logsumexp(x, -1)", "[torch.randn(4, 70000)]")
    (kernel,) = read_config(design_candidates(lse, device="cuda")[0].source).kernels
    assert not kernel.config["PERSISTENT"] and "ONLINE_MAX" not in kernel.config


def test_focus_of_parameters() -> None:
    assert focus_of("PERSISTENT") is Focus.PARALLEL_MAPPING and focus_of("SPLIT_K") is Focus.PARALLEL_MAPPING
    assert focus_of("XBLOCK") is Focus.TILING and focus_of("BLOCK_K") is Focus.TILING
    assert focus_of("num_warps") is Focus.MEMORY and focus_of("EVICT_STREAM") is Focus.MEMORY


def _source(tmp_path: Path, name: str, forward: str, inputs: str) -> str:
    from expert_helpers import problem

    from agents.expert.design import design_candidates

    return design_candidates(problem(tmp_path, name, forward, inputs), device="cuda")[0].source


def test_int64_index_math_only_where_an_index_can_reach_two_to_the_31(tmp_path: Path) -> None:
    """A pooling window re-reads its input: outputs x window (122 M x 27 for KernelBench level 1
    #43) passes 2**31 while every address stays under 2**30, so the kernel keeps int32 index math
    (int64 division, which the index digits need, is emulated on the GPU). A buffer past 2**31
    elements still gets int64. Shapes are traced, not allocated."""
    pool = _source(tmp_path, "pool3d", "return F.max_pool3d(x, 3, 2, 1, 3)", "[torch.rand(16, 32, 128, 128, 128)]")
    assert "tl.int64" not in pool
    big = _source(tmp_path, "big_sum", "return x.sum(-1)", "[torch.rand(2, 2**30 + 64)]")
    assert ".to(tl.int64)" in big
