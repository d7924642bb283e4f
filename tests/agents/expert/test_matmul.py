"""Triton matmul candidates for matmuls with nothing to fuse (KernelBench level 1 #1-#18 style).

Each problem is tiny and odd-sized (no dim divides a block) and every draft the designer writes
is judged by the real harness on CPU (the Triton interpreter). fp32 problems get two variants,
3xTF32 and ieee; 16-bit problems one.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agents.expert.agents import ExpertDesigner, ExpertTuner
from agents.expert.codegen import analyse, read_config, render
from agents.expert.kernels.matmul import MatmulEpilogueTemplate
from agents.expert.tuning import focus_of
from agents.protocol import AgentTask, Draft
from egg.evaluate.harness import EvalOptions, Harness
from egg.problem import inspect_problem
from egg.vocabulary import Backend, Focus, Stage
from principles import load_packs

HEADER = "import torch\nimport torch.nn as nn\n\n"


def problem(forward: str, inputs: str, dtype: str, shapes: str = "") -> str:
    """A problem whose forward returns ``forward`` of ``a`` and ``b`` (``inputs``: get_inputs' list)."""
    return HEADER + textwrap.dedent(f"""\
        M = 19
        K = 23
        N = 17
        SHAPES = {{{shapes}}}

        class Model(nn.Module):
            def forward(self, a, b):
                return {forward}

        def get_inputs():
            return [t.to(torch.{dtype}) for t in {inputs}]

        def get_init_inputs():
            return []
        """)


CASES: dict[str, tuple[str, str, str]] = {  # name: (forward, inputs, shape sets)
    "mm": ("torch.matmul(a, b)", "[torch.randn(M, K), torch.randn(K, N)]", '"odd": {"M": 5, "N": 33}'),
    "transposed_a": ("torch.matmul(a.T, b)", "[torch.randn(K, M), torch.randn(K, N)]", ""),
    "transposed_b": ("torch.mm(a, b.t())", "[torch.randn(M, K), torch.randn(N, K)]", ""),
    "transposed_both": ("a.transpose(0, 1) @ b.T", "[torch.randn(K, M), torch.randn(N, K)]", ""),
    "bmm": ("torch.bmm(a, b)", "[torch.randn(3, M, K), torch.randn(3, K, N)]", '"odd": {"K": 40}'),
    "bmm_transposed_b": ("torch.bmm(a, b.transpose(1, 2))", "[torch.randn(2, M, K), torch.randn(2, N, K)]", ""),
    "matmul_broadcast_batch": ("torch.matmul(a, b)", "[torch.randn(2, 1, M, K), torch.randn(3, K, N)]", ""),
    "tensor3d_matrix": ("torch.matmul(a, b)", "[torch.randn(2, M, K), torch.randn(K, N)]", ""),
    "matrix_vector": ("torch.matmul(a, b)", "[torch.randn(M, K), torch.randn(K, 1)]", '"long": {"K": 70}'),
    "vector_matrix": ("torch.matmul(a, b)", "[torch.randn(1, K), torch.randn(K, N)]", ""),
}


def write(directory: Path, name: str, dtype: str) -> Path:
    forward, inputs, shapes = CASES[name]
    path = directory / f"{name}_{dtype}.py"
    path.write_text(problem(forward, inputs, dtype, shapes))
    return path


def task_for(path: Path, parent: Draft | None = None, focus: Focus = Focus.STRUCTURE) -> AgentTask:
    stage = Stage.ALGORITHM_DESIGN if parent is None else Stage.HARDWARE_TUNING
    return AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="", stage=stage,
                     focus=focus, backend=Backend.TRITON, parent=parent, round=1, agent_name="expert")


def assert_accepted(harness: Harness, path: Path, draft: Draft, where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    candidate = where / "candidate.py"
    candidate.write_text(draft.source)
    shapes = "all" if len(inspect_problem(path).shape_sets) > 1 else None
    verdict = harness.evaluate(path, candidate, EvalOptions(device="cpu", timeout_s=300, shapes=shapes), where)
    assert verdict.accepted, f"{draft.structure}: {verdict.stage_failed}: {verdict.reasons}"
    assert verdict.kernels_launched


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", list(CASES))
def test_matmul_alone_drafts_are_accepted(name: str, dtype: str, harness: Harness, tmp_path: Path) -> None:
    path = write(tmp_path, name, dtype)
    designer = ExpertDesigner(device="cpu")
    drafts = designer.propose(task_for(path))
    assert drafts, designer.last_errors
    variants = [read_config(d.source).variant for d in drafts]  # type: ignore[union-attr]
    if dtype == "float32":
        assert variants == ["triton-matmul-3xtf32", "triton-matmul-ieee"]
        assert 'input_precision="tf32x3"' in drafts[0].source and "3xTF32" in drafts[0].source.splitlines()[2]
        assert 'input_precision="ieee"' in drafts[1].source and "ieee" in drafts[1].source.splitlines()[2]
    else:
        assert variants == ["triton-matmul"] and "input_precision" not in drafts[0].source
    packs = load_packs()
    for i, draft in enumerate(drafts):
        assert draft.principle_ids and all(packs.find(pid) for pid in draft.principle_ids)
        forward = draft.source.split("class ModelNew")[1]
        assert "torch.matmul" not in forward and "torch.bmm" not in forward and "contiguous" not in forward
        assert_accepted(harness, path, draft, tmp_path / f"draft{i}")


def test_transposes_stay_views_read_through_strides(tmp_path: Path) -> None:
    program = analyse(write(tmp_path, "transposed_both", "float32"))
    source = render(program, program.variants[0], "cuda").source
    forward = source.split("class ModelNew")[1]
    assert "= a.transpose(0, 1)" in forward and "= b.T" in forward  # views: no data moves
    assert "a.stride(0), a.stride(1), b.stride(0), b.stride(1)" in source


def test_gpu_default_configs(tmp_path: Path) -> None:
    fp32 = analyse(write(tmp_path, "mm", "float32"))
    tf32x3, ieee = (fp32.variant(v).groups[0] for v in ("triton-matmul-3xtf32", "triton-matmul-ieee"))
    big = tf32x3.spec.model_copy(deep=True)
    for spec in (big.nodes[0], big.inputs[0], big.inputs[1]):
        spec.shape = [4096, 4096]
    assert tf32x3.template.default_config(big, "cuda") == {
        "GROUP_M": 8, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3,
        "EVICT_EPILOGUE": "", "SPLIT_K": 1}
    assert ieee.template.default_config(big, "cuda")["BLOCK_M"] == 64
    matvec = analyse(write(tmp_path, "matrix_vector", "float32"))
    for variant in matvec.variants:
        (group,) = variant.groups
        config = group.template.default_config(group.spec, "cuda")
        assert config["BLOCK_N"] == 16
        assert 16 in group.template.tuning_space(group.spec)["BLOCK_N"]
    vecmat = analyse(write(tmp_path, "vector_matrix", "float16")).variants[0].groups[0]
    assert vecmat.template.default_config(vecmat.spec, "cuda")["BLOCK_M"] == 16


def test_3xtf32_template_takes_fp32_only() -> None:
    template = MatmulEpilogueTemplate("tf32x3")
    assert template.name == "matmul-epilogue-3xtf32" and MatmulEpilogueTemplate().name == "matmul-epilogue"
    with pytest.raises(ValueError):
        MatmulEpilogueTemplate("tf32")


def test_tuner_rerenders_a_3xtf32_parent(harness: Harness, tmp_path: Path) -> None:
    path = write(tmp_path, "bmm", "float32")
    parent = ExpertDesigner(device="cpu").propose(task_for(path))[0].model_copy(update={"id": "s1r1-expert-0"})
    tuner = ExpertTuner(Focus.TILING, device="cpu")
    (draft,) = tuner.propose(task_for(path, parent=parent, focus=Focus.TILING))
    old, new = read_config(parent.source), read_config(draft.source)
    assert old is not None and new is not None
    assert new.variant == "triton-matmul-3xtf32" and old.by_launcher() != new.by_launcher()
    assert_accepted(harness, path, draft, tmp_path / "tuned")


def test_old_triton_matmul_id_reads_as_ieee(tmp_path: Path) -> None:
    program = analyse(write(tmp_path, "mm", "float32"))
    assert program.variant("triton-matmul").id == "triton-matmul-ieee"


BATCHED_EPILOGUE = HEADER + textwrap.dedent("""\
    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.shift = nn.Parameter(torch.randn(n))

        def forward(self, a, b):
            return torch.relu(torch.bmm(a, b) + self.shift) * 0.5

    def get_inputs():
        return [torch.randn(2, 19, 23), torch.randn(2, 23, 17)]

    def get_init_inputs():
        return [17]
    """)


def test_bmm_with_epilogue_is_one_kernel(harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "bmm_epilogue.py"
    path.write_text(BATCHED_EPILOGUE)
    program = analyse(path)
    assert [v.id for v in program.variants] == ["fused", "triton-matmul-3xtf32", "triton-matmul-ieee"]
    (group,) = program.variant("triton-matmul-3xtf32").groups
    assert [n.op for n in group.spec.nodes] == ["bmm", "add", "relu", "mul"]
    drafts = ExpertDesigner(device="cpu").propose(task_for(path))
    for i, draft in enumerate(drafts):
        assert_accepted(harness, path, draft, tmp_path / f"draft{i}")


# ---- weight-only int8: the dequantisation is the GEMM's B-operand prologue ----------------------

INT8_LINEAR = HEADER + textwrap.dedent("""\
    import torch.nn.functional as F

    M = 5
    K = 37
    N = 19
    DTYPE = "{dtype}"
    SHAPES = {{"odd": {{"M": 2, "K": 70, "N": 33}}}}

    class Model(nn.Module):
        def __init__(self, k, n, dtype):
            super().__init__()
            w = torch.randn(n, k) * 0.02
            scale = w.abs().amax(dim=1) / 127.0
            self.register_buffer("weight", torch.round(w / scale[:, None]).clamp(-127, 127).to({wdtype}))
            self.register_buffer("scale", scale.to(getattr(torch, dtype)))

        def forward(self, x):
            return {forward}

    def get_inputs():
        return [torch.randn(M, K).to(getattr(torch, DTYPE))]

    def get_init_inputs():
        return [K, N, DTYPE]
    """)
DEQUANT = "F.linear(x, self.weight.to(x.dtype) * self.scale.unsqueeze(1))"


def int8_problem(directory: Path, dtype: str, forward: str = DEQUANT, wdtype: str = "torch.int8") -> Path:
    path = directory / f"int8_linear_{dtype}.py"
    path.write_text(INT8_LINEAR.format(dtype=dtype, forward=forward, wdtype=wdtype))
    return path


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_int8_weight_is_dequantised_in_the_gemm(dtype: str, harness: Harness, tmp_path: Path) -> None:
    path = int8_problem(tmp_path, dtype, forward=f"torch.relu({DEQUANT} + 0.5)")
    drafts = ExpertDesigner(device="cpu").propose(task_for(path))
    by_variant = {read_config(d.source).variant: d for d in drafts}  # type: ignore[union-attr]
    wanted = ["triton-matmul-dequant-ieee"] if dtype == "float32" else ["triton-matmul-dequant"]
    assert set(wanted) <= set(by_variant)
    for vid in wanted:
        draft = by_variant[vid]
        assert "read as weight (int8) and dequantised in registers" in draft.structure
        assert "algorithm-structure/fuse-dequant-into-gemm" in draft.principle_ids
        forward = draft.source.split("class ModelNew")[1]
        assert ".to(" not in forward and "F.linear" not in forward
        assert_accepted(harness, path, draft, tmp_path / vid)


def test_int8_workload_small_is_one_kernel(harness: Harness, tmp_path: Path) -> None:
    path = Path(__file__).parents[3] / "workloads" / "int8_weight_only_linear.py"
    program = analyse(path, "small")
    draft = Draft(agent="t", stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, structure="dequant",
                  source=render(program, program.variant("triton-matmul-dequant-ieee"), "cpu").source)
    candidate = tmp_path / "candidate.py"
    candidate.write_text(draft.source)
    verdict = harness.evaluate(path, candidate, EvalOptions(device="cpu", timeout_s=300, shapes="small"), tmp_path)
    assert verdict.accepted, verdict.reasons
    assert verdict.kernels_launched == ["_fused_to_mul_linear_kernel"]


def test_int8_workload_gpu_defaults() -> None:
    path = Path(__file__).parents[3] / "workloads" / "int8_weight_only_linear.py"
    for shape_set, expected in (("default", {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128, "SPLIT_K": 1}),
                                ("prefill", {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "SPLIT_K": 1})):
        program = analyse(path, shape_set)
        assert [v.id for v in program.variants] == ["fused", "triton-matmul-dequant"]
        (group,) = program.variant("triton-matmul-dequant").groups
        config = group.template.default_config(group.spec, "cuda")
        assert {k: config[k] for k in expected} == expected
        source = render(program, program.variant("triton-matmul-dequant"), "cuda").source
        assert "tl.load(weight_ptrs, mask=b_mask, other=0).to(tl.float32)" in source  # int8 in, fp32 in registers
        assert "tl.where(b_mask, (to * unsqueeze), 0.0).to(a.dtype)" in source  # one rounding to bf16


def test_unsupported_prologues_are_declined(tmp_path: Path) -> None:
    program = analyse(int8_problem(tmp_path, "float16", wdtype="torch.int32"))  # int32: not exact in fp32
    assert [v.id for v in program.variants] == ["fused", "triton-matmul-prologue"]  # the cast stays torch
    assert [n.op for n in program.variants[1].groups[0].spec.nodes] == ["mul", "linear"]
    mm = write(tmp_path, "mm", "float16")
    mm.write_text(mm.read_text().replace("torch.matmul(a, b)", "torch.matmul(a, b * 2.0)"))
    assert "triton-matmul-prologue" in [v.id for v in analyse(mm).variants]  # a float prologue is fine
    bmm = write(tmp_path, "bmm", "float16")
    bmm.write_text(bmm.read_text().replace("torch.bmm(a, b)", "torch.bmm(a, b * 2.0)"))
    assert not any("prologue" in v.id for v in analyse(bmm).variants)  # batched: the template declines it


# ---- split-K ------------------------------------------------------------------------------------

SPLIT = HEADER + textwrap.dedent("""\
    M = 7
    K = 150
    N = 9

    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.bias = nn.Parameter(torch.randn(n))

        def forward(self, a, b):
            return torch.sigmoid(torch.addmm(self.bias, a, b.t(), beta=0.5)) * 2.0

    def get_inputs():
        return [torch.randn(M, K), torch.randn(N, K)]

    def get_init_inputs():
        return [N]
    """)


def test_forced_split_k_is_accepted(harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "split.py"
    path.write_text(SPLIT)
    program = analyse(path)
    variant = program.variant("triton-matmul-ieee")
    (group,) = variant.groups
    rendered = render(program, variant, "cpu", {group.launcher: {"SPLIT_K": 4, "BLOCK_K": 16}})
    assert "split-K 4" in rendered.structure and rendered.config.kernels[0].config["SPLIT_K"] == 4
    draft = Draft(agent="t", stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, source=rendered.source,
                  structure=rendered.structure)
    assert_accepted(harness, path, draft, tmp_path / "split")
    dequant = int8_problem(tmp_path, "float32")
    program = analyse(dequant)
    variant = program.variant("triton-matmul-dequant-ieee")
    rendered = render(program, variant, "cpu", {variant.groups[0].launcher: {"SPLIT_K": 2, "BLOCK_K": 16}})
    draft = draft.model_copy(update={"source": rendered.source})
    assert_accepted(harness, dequant, draft, tmp_path / "split_dequant")


def test_split_k_defaults_for_under_filled_grids(tmp_path: Path) -> None:
    program = analyse(write(tmp_path, "mm", "float32"))
    (group,) = program.variant("triton-matmul-3xtf32").groups

    def config(m: int, n: int, k: int) -> dict[str, object]:
        spec = group.spec.model_copy(deep=True)
        spec.nodes[0].shape, spec.inputs[0].shape, spec.inputs[1].shape = [m, n], [m, k], [k, n]
        assert "SPLIT_K" in group.template.tuning_space(spec)
        return group.template.default_config(spec, "cuda")

    assert config(256, 256, 524288)["SPLIT_K"] == 16  # 16 tiles of 64 x 64: two waves with 16 slices
    assert config(2048, 1, 1048576)["SPLIT_K"] == 2  # matrix-vector: 128 row tiles
    assert config(4096, 4096, 4096)["SPLIT_K"] == 1  # already several waves
    assert config(256, 256, 1024)["SPLIT_K"] == 1  # K too short to split
    assert focus_of("SPLIT_K") is Focus.PARALLEL_MAPPING  # the tuner's parallel-mapping focus owns it
