"""Analysis of real problems: the fixtures and small KernelBench-format files written per test."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from egg.analysis import (
    H200_ROOFLINE,
    OpNode,
    ProblemAnalysis,
    analyze_module,
    analyze_problem,
)
from egg.errors import EggInputError
from egg.vocabulary import Bottleneck, OpClass

ProblemWriter = Callable[..., Path]  # the write_problem fixture (tests/analysis/conftest.py)


def ops_by_target(analysis: ProblemAnalysis) -> dict[str, OpNode]:
    return {op.target: op for op in analysis.ops}


# ---------------------------------------------------------------- fixture problems


def test_add_relu_fixture(fixtures_dir: Path) -> None:
    analysis = analyze_problem(fixtures_dir / "problems" / "add_relu.py")
    assert analysis.trace_method == "export"
    assert analysis.op_classes == [OpClass.ELEMENTWISE]
    assert [op.target for op in analysis.ops] == ["aten.add.Tensor", "aten.relu.default"]
    assert [(s.name, s.shape, s.dtype) for s in analysis.inputs] == [
        ("x", [37, 129], "float32"),
        ("y", [37, 129], "float32"),
    ]
    assert [(s.shape, s.dtype) for s in analysis.outputs] == [([37, 129], "float32")]
    elements = 37 * 129
    assert analysis.min_bytes == 3 * elements * 4  # two inputs read, one output written
    assert analysis.unfused_bytes == 3 * elements * 4 + 2 * elements * 4  # add, then relu
    assert analysis.flops == 2 * elements
    assert analysis.bottleneck == Bottleneck.LATENCY  # 57 KB is nothing for an H200
    assert [(g.kind, g.nodes) for g in analysis.fusion_groups] == [
        ("elementwise_chain", ["add", "relu"])
    ]


def test_linear_scale_fixture(fixtures_dir: Path) -> None:
    analysis = analyze_problem(fixtures_dir / "problems" / "linear_scale.py")
    ops = ops_by_target(analysis)
    linear = ops["aten.addmm.default"]  # nn.Linear: bias + x @ weight.T
    assert linear.op_class == OpClass.MATMUL
    assert linear.module == "linear"
    assert linear.inputs == ["linear.bias", "x", "permute"]
    transpose = ops["aten.permute.default"]
    assert transpose.is_view and transpose.inputs == ["linear.weight"] and transpose.bytes == 0
    assert linear.input_shapes == [[40], [8, 48], [48, 40]]
    assert linear.flops == 2 * 8 * 40 * 48 + 8 * 40  # multiply-adds plus the bias add
    assert ops["aten.mul.Tensor"].args == {"other": 0.5}
    assert [p.name for p in analysis.parameters] == ["linear.weight", "linear.bias"]
    assert analysis.min_bytes == (8 * 48 + 8 * 40 + 40 * 48 + 40) * 4
    assert [(g.kind, g.anchor, g.nodes) for g in analysis.fusion_groups] == [
        ("matmul_epilogue", "addmm", ["addmm", "mul"])
    ]


def test_shape_set_override_changes_shapes(fixtures_dir: Path) -> None:
    default = analyze_problem(fixtures_dir / "problems" / "add_relu.py")
    small = analyze_problem(fixtures_dir / "problems" / "add_relu.py", shape_set="small")
    assert small.shape_set == "small"
    assert [s.shape for s in small.inputs] == [[5, 33], [5, 33]]
    assert small.ops[0].output_shape == [5, 33]
    assert small.min_bytes < default.min_bytes
    assert "x: float32[5, 33]" in small.describe()


def test_unknown_shape_set_is_a_user_error(fixtures_dir: Path) -> None:
    with pytest.raises(EggInputError, match="huge"):
        analyze_problem(fixtures_dir / "problems" / "add_relu.py", shape_set="huge")


def test_describe_states_shapes_dtypes_and_costs(fixtures_dir: Path) -> None:
    text = analyze_problem(fixtures_dir / "problems" / "linear_scale.py").describe()
    for expected in (
        "x: float32[8, 48]",
        "output: float32[8, 40]",
        "linear.weight: float32[40, 48]",
        "linear.bias: float32[40]",
        "addmm = aten.addmm.default (module linear) [matmul]",
        "permute = aten.permute.default (module linear) [view, free]",
        "[elementwise]",
        "31,040 FLOP",  # the linear alone: 2*8*40*48 + 8*40
        "matmul_epilogue around addmm: addmm -> mul",
        "bottleneck: latency",
        "H200 roofline",
    ):
        assert expected in text, expected


def test_analysis_round_trips_as_json(fixtures_dir: Path) -> None:
    analysis = analyze_problem(fixtures_dir / "problems" / "linear_scale.py")
    again = ProblemAnalysis.model_validate_json(analysis.model_dump_json())
    assert again == analysis
    json.loads(analysis.model_dump_json())  # args are plain JSON


# ---------------------------------------------------------------- costs and roofline


def test_matmul_flops_are_2mnk(write_problem: ProblemWriter) -> None:
    m, n, k = 64, 48, 80
    path = write_problem(
        "a, b: return torch.matmul(a, b)",
        inputs="[torch.randn(M, K), torch.randn(K, N)]", constants=f"M = {m}\nN = {n}\nK = {k}",
    )
    analysis = analyze_problem(path)
    assert analysis.flops == 2 * m * n * k
    assert analysis.min_bytes == (m * k + k * n + m * n) * 4


def test_einsum_flops_follow_the_equation(write_problem: ProblemWriter) -> None:
    path = write_problem(
        'a, b: return torch.einsum("bji,bjk->bik", a, b)',  # contracts a's middle dim
        inputs="[torch.randn(2, 4, 3), torch.randn(2, 4, 5)]",
    )
    analysis = analyze_problem(path)
    assert analysis.op_classes == [OpClass.MATMUL]  # bmm; the rest is permutes and views
    assert [op.target for op in analysis.ops if not op.is_view] == ["aten.bmm.default"]
    assert analysis.flops == 2 * 2 * 3 * 4 * 5


def test_conv_flops_count_each_multiply_add(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x: return self.conv(x)",
        init="self.conv = nn.Conv2d(3, 8, 3)", inputs="[torch.randn(2, 3, 10, 10)]",
    )
    out_numel = 2 * 8 * 8 * 8
    assert analyze_problem(path).flops == 2 * out_numel * 3 * 3 * 3 + out_numel


def test_big_elementwise_is_memory_bound(write_problem: ProblemWriter) -> None:
    # 4096 x 4096 float32: 128 MB in and out, ~31 us on the H200; analysed on fake tensors,
    # so nothing of that size is allocated here.
    path = write_problem(
        "x: return torch.relu(x)",
                         inputs="[torch.randn(4096, 4096)]")
    analysis = analyze_problem(path)
    assert analysis.min_bytes == 2 * 4096 * 4096 * 4
    assert analysis.bottleneck == Bottleneck.MEMORY
    expected_ms = analysis.min_bytes / H200_ROOFLINE["memory_bytes_per_s"] * 1e3
    assert analysis.roofline_ms == pytest.approx(expected_ms)
    assert analysis.arithmetic_intensity == pytest.approx(1 / 8)


def test_big_matmul_is_compute_bound(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "a, b: return a @ b",
        inputs="[torch.randn(4096, 4096, dtype=torch.bfloat16)] * 2",
    )
    analysis = analyze_problem(path)
    assert [op.target for op in analysis.ops] == ["aten.mm.default"]
    assert analysis.bottleneck == Bottleneck.COMPUTE
    expected_ms = 2 * 4096**3 / H200_ROOFLINE["bf16_tensor_flops_per_s"] * 1e3
    assert analysis.roofline_ms == pytest.approx(expected_ms)


def test_tiny_op_is_latency_bound(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x: return x * 3", inputs="[torch.randn(16)]")
    analysis = analyze_problem(path)
    assert analysis.bottleneck == Bottleneck.LATENCY
    assert "bottleneck: latency" in analysis.describe()


# ---------------------------------------------------------------- fusion groups


def test_matmul_bias_relu_is_one_matmul_epilogue(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x: return torch.relu(torch.matmul(x, self.w) + self.b)",
        init="self.w = nn.Parameter(torch.randn(16, 8))\nself.b = nn.Parameter(torch.randn(8))",
        inputs="[torch.randn(4, 16)]",
    )
    analysis = analyze_problem(path)
    assert analysis.op_classes == [OpClass.BROADCAST, OpClass.ELEMENTWISE, OpClass.MATMUL]
    assert [(g.kind, g.anchor, g.nodes) for g in analysis.fusion_groups] == [
        ("matmul_epilogue", "mm", ["mm", "add", "relu"])
    ]


def test_fusion_breaks_at_softmax_and_sees_through_views(write_problem: ProblemWriter) -> None:
    path = write_problem(
        """x:
        y = torch.tanh(self.linear(x) * 2.0).view(4, 2, 4)
        z = torch.softmax(y, dim=-1) - 1.0
        return torch.sigmoid(z) + torch.sigmoid(y), self.pool(z)
        """,
        init="self.linear = nn.Linear(8, 8)\nself.pool = nn.AvgPool1d(2)",
        inputs="[torch.randn(4, 8)]",
    )
    groups = [(g.kind, g.nodes) for g in analyze_problem(path).fusion_groups]
    assert groups == [
        ("matmul_epilogue", ["addmm", "mul", "tanh"]),
        # softmax (max, shift, exp, sum, divide), then its pointwise users: one pass over rows
        ("reduction_epilogue", ["amax", "sub", "exp", "sum_1", "div", "sub_1", "sigmoid"]),
        ("elementwise_chain", ["sigmoid_1", "add"]),
        ("single", ["avg_pool2d"]),
    ]


def test_norm_and_its_prologue_are_one_reduction_group(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x, r: return self.norm(x + r)",
        init="self.norm = nn.LayerNorm(16)",
        inputs="[torch.randn(4, 16), torch.randn(4, 16)]",
    )
    analysis = analyze_problem(path)
    (group,) = analysis.fusion_groups
    assert group.kind == "reduction_epilogue" and group.anchor == "var"
    assert group.nodes[0] == "add" and {"var", "mean", "rsqrt"} <= set(group.nodes)
    assert OpClass.NORMALIZATION in analysis.op_classes


# ---------------------------------------------------------------- what cannot be captured


def test_value_dependent_control_flow_is_noted_not_raised(write_problem: ProblemWriter) -> None:
    path = write_problem(
        """x:
        if x.sum() > 0:
            return torch.relu(x)
        return -x
        """,
        inputs="[torch.randn(4, 8)]",
    )
    analysis = analyze_problem(path)
    assert analysis.trace_method == "none"
    assert any("depends on tensor values at problem.py:" in n for n in analysis.notes)
    assert analysis.ops == [] and analysis.op_classes == [] and analysis.outputs == []
    assert "traced with none" in analysis.describe()


def test_shape_dependent_control_flow_is_captured(write_problem: ProblemWriter) -> None:
    path = write_problem(
        """x:
        if x.shape[0] > 2:
            x = self.linear(x)
        return torch.relu(x)
        """,
        init="self.linear = nn.Linear(8, 6)",
        inputs="[torch.randn(4, 8)]",
    )
    analysis = analyze_problem(path)
    assert analysis.trace_method == "export"
    assert [op.target for op in analysis.ops] == ["aten.permute.default", "aten.addmm.default", "aten.relu.default"]
    assert analysis.op_classes == [OpClass.ELEMENTWISE, OpClass.MATMUL]
    linear = analysis.ops[1]
    assert linear.inputs == ["linear.bias", "x", "permute"]
    assert linear.flops == 2 * 4 * 6 * 8 + 4 * 6
    assert analysis.outputs[0].shape == [4, 6]


def test_data_dependent_shapes_are_bounded_and_noted(write_problem: ProblemWriter) -> None:
    path = write_problem("x: return torch.exp(x[x > 0])", inputs="[torch.randn(64)]")
    analysis = analyze_problem(path)
    assert analysis.trace_method == "export"
    assert any("data-dependent sizes" in n for n in analysis.notes)
    assert OpClass.INDEXING in analysis.op_classes
    assert analysis.outputs[0].shape == [64]  # at most every element survives the mask


def test_model_that_cannot_be_built_gets_an_empty_analysis(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x: return x", init="raise RuntimeError('no weights here')",
        inputs="[torch.randn(2)]",
    )
    analysis = analyze_problem(path)
    assert analysis.trace_method == "none"
    assert "no weights here" in analysis.notes[0]


# ---------------------------------------------------------------- analyze_module


class _ScaledSum(nn.Module):
    def forward(self, x: torch.Tensor, dim: int, scale: float) -> torch.Tensor:
        if dim == 1:  # control flow on a Python scalar: the capture specialises it
            x = x * scale
        return x.sum(dim=dim)


def test_analyze_module_with_scalar_inputs() -> None:
    analysis = analyze_module(_ScaledSum(), [torch.randn(3, 5), 1, 0.5], name="scaled_sum")
    assert analysis.problem == "scaled_sum"
    assert analysis.trace_method == "export"
    assert [s.text() for s in analysis.inputs] == [
        "x: float32[3, 5]", "dim: int = 1", "scale: float = 0.5"
    ]
    total = ops_by_target(analysis)["aten.sum.dim_IntList"]
    assert total.args == {"dim": [1]}
    assert analysis.outputs[0].shape == [3]
    assert analysis.min_bytes == (15 + 3) * 4  # scalars take no memory traffic
    assert "dim: int = 1" in analysis.describe()


def test_analysis_leaves_module_state_untouched() -> None:
    model = nn.Sequential(nn.BatchNorm1d(4), nn.ReLU())  # training mode: forward updates stats
    analysis = analyze_module(model, [torch.randn(8, 4) + 3.0])
    bn = model[0]
    assert int(bn.num_batches_tracked) == 0
    assert torch.equal(bn.running_mean, torch.zeros(4))
    assert [p.family for p in analysis.patterns] == ["batch_norm"]
    assert [p.name for p in analysis.parameters] == [
        "0.weight", "0.bias", "0.running_mean", "0.running_var", "0.num_batches_tracked"
    ]
