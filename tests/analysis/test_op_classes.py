"""Every OpClass, views, and the static arguments recorded for codegen, on small real problems.

Classes come from the canonical ATen ops (a LayerNorm is reductions and pointwise ops) plus the
classes of the patterns found (that LayerNorm is also NORMALIZATION)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from egg.analysis import OpNode, ProblemAnalysis, analyze_problem
from egg.vocabulary import OpClass

ProblemWriter = Callable[..., Path]  # the write_problem fixture (tests/analysis/conftest.py)


def ops_by_target(analysis: ProblemAnalysis) -> dict[str, OpNode]:
    return {op.target: op for op in analysis.ops}


CLASS_CASES: dict[str, tuple[str, str, str, str, set[OpClass]]] = {
    # name: (init, forward, inputs, init_inputs, expected classes)
    "elementwise": (
        "",
        "x: return F.gelu(torch.sigmoid(x) * 2.0).clamp(min=0.1)",
        "[torch.randn(4, 8)]", "[]", {OpClass.ELEMENTWISE},
    ),
    "broadcast": (
        "self.bias = nn.Parameter(torch.randn(8))",
        "x: return x + self.bias",
        "[torch.randn(4, 8)]", "[]", {OpClass.BROADCAST},
    ),
    "reduction": (
        "",
        "x: return torch.sum(x, dim=1) + torch.amax(x, dim=1)",
        "[torch.randn(4, 8)]", "[]", {OpClass.REDUCTION, OpClass.ELEMENTWISE},
    ),
    "normalization": (
        "self.norm = nn.LayerNorm(8)\nself.gn = nn.GroupNorm(2, 4)",
        "x: return self.gn(self.norm(x))",
        "[torch.randn(2, 4, 8)]", "[]",
        {OpClass.NORMALIZATION, OpClass.REDUCTION, OpClass.ELEMENTWISE, OpClass.BROADCAST},
    ),
    "softmax": (
        "",
        "x: return F.log_softmax(x, dim=-1) + torch.logsumexp(x, dim=-1, keepdim=True)",
        "[torch.randn(4, 8)]", "[]", {OpClass.SOFTMAX, OpClass.REDUCTION, OpClass.ELEMENTWISE, OpClass.BROADCAST},
    ),
    "scan": ("", "x: return torch.cumsum(x, dim=1)", "[torch.randn(4, 8)]", "[]",
             {OpClass.SCAN}),
    "matmul": ("", "a, b: return torch.bmm(a, b)",
               "[torch.randn(2, 4, 8), torch.randn(2, 8, 3)]", "[]", {OpClass.MATMUL}),
    "conv": ("self.conv = nn.ConvTranspose2d(3, 4, 3, stride=2)", "x: return self.conv(x)",
             "[torch.randn(1, 3, 6, 6)]", "[]", {OpClass.CONV}),
    "pooling": (
        "self.pool = nn.MaxPool2d(2)",
        "x: return F.adaptive_avg_pool2d(self.pool(x), 1)",
        "[torch.randn(1, 3, 8, 8)]", "[]", {OpClass.POOLING, OpClass.REDUCTION},  # adaptive to 1: a mean
    ),
    "loss": (
        "self.loss = nn.CrossEntropyLoss()",
        "logits, target, a, b: return self.loss(logits, target) + F.smooth_l1_loss(a, b)",
        "[torch.randn(4, 5), torch.randint(0, 5, (4,)), torch.randn(4), torch.randn(4)]", "[]",
        {OpClass.LOSS, OpClass.SOFTMAX, OpClass.INDEXING, OpClass.REDUCTION, OpClass.ELEMENTWISE,
         OpClass.BROADCAST},
    ),
    "indexing": (
        "",
        "x, idx: return torch.cat([torch.gather(x, 1, idx), x[:, 1:3]], dim=1)",
        "[torch.randn(4, 8), torch.randint(0, 8, (4, 2))]", "[]", {OpClass.INDEXING},
    ),
    "attention": (
        "",
        "q, k, v: return F.scaled_dot_product_attention(q, k, v, is_causal=True)",
        "[torch.randn(1, 2, 4, 8)] * 3", "[]", {OpClass.ATTENTION},
    ),
}


@pytest.mark.parametrize("case", sorted(CLASS_CASES))
def test_op_classes(write_problem: ProblemWriter, case: str) -> None:
    init, forward, inputs, init_inputs, expected = CLASS_CASES[case]
    path = write_problem(forward, init=init, inputs=inputs, init_inputs=init_inputs)
    analysis = analyze_problem(path)
    assert analysis.trace_method == "export", analysis.notes
    assert set(analysis.op_classes) == expected
    assert not [n for n in analysis.notes if "unclassified" in n]
    assert analysis.outputs and all(o.is_tensor for o in analysis.outputs)


def test_views_are_recorded_free_and_classless(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x: return torch.relu(x.view(4, 2, 4).permute(0, 2, 1).contiguous()).flatten(1)",
        inputs="[torch.randn(4, 8)]",
    )
    analysis = analyze_problem(path)
    views = [op for op in analysis.ops if op.is_view]
    assert [op.target for op in views] == ["aten.view.default", "aten.permute.default", "aten.view.default"]
    assert all(op.flops == 0 and op.bytes == 0 for op in views)
    assert views[0].args == {"size": [4, 2, 4]}
    assert views[1].args == {"dims": [0, 2, 1]}
    # .contiguous() after the permute is a real copy (a layout change), so it stays and costs bytes
    copy = ops_by_target(analysis)["aten.clone.default"]
    assert copy.bytes == 2 * 32 * 4 and copy.flops == 0
    assert analysis.op_classes == [OpClass.ELEMENTWISE]
    assert analysis.outputs[0].shape == [4, 8]


def test_static_arguments_are_recorded(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x: return F.leaky_relu(self.conv(torch.softmax(x, dim=1)), negative_slope=0.2)",
        init="self.conv = nn.Conv2d(3, 4, kernel_size=3, stride=2, padding=1)",
        inputs="[torch.randn(1, 3, 8, 8)]",
    )
    analysis = analyze_problem(path)
    ops = ops_by_target(analysis)
    assert ops["aten.amax.default"].args == {"dim": [1], "keepdim": True}
    assert ops["aten.leaky_relu.default"].args["negative_slope"] == 0.2
    conv = ops["aten.convolution.default"]
    assert (conv.args["stride"], conv.args["padding"], conv.args["transposed"]) == ([2, 2], [1, 1], False)
    assert conv.inputs == ["div", "conv.weight", "conv.bias"] and conv.module == "conv"
    assert [p.params["dims"] for p in analysis.patterns if p.family == "softmax"] == [[1]]


def test_max_of_two_tensors_is_pointwise_max_over_a_dim_reduces(
    write_problem: ProblemWriter,
) -> None:
    path = write_problem(
        "x, y: v, i = torch.max(x, dim=1)\nreturn torch.max(x, y), v, i",
        inputs="[torch.randn(4, 8), torch.randn(4, 8)]",
    )
    analysis = analyze_problem(path)
    classes = [(op.target, op.op_class, op.is_view) for op in analysis.ops]
    assert ("aten.max.dim", OpClass.REDUCTION, False) in classes
    assert ("aten.maximum.default", OpClass.ELEMENTWISE, False) in classes
    assert ("getitem", OpClass.OTHER, True) in classes  # picking v out of (values, indices)
    assert [o.dtype for o in analysis.outputs] == ["float32", "float32", "int64"]


def test_recurrent_layers_unroll_to_their_gate_matmuls(write_problem: ProblemWriter) -> None:
    path = write_problem(
        """x, h0=None:
        out, (h, c) = self.lstm(x)
        return out[:, -1, :], h
        """,
        init="self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)",
        inputs="[torch.randn(3, 5, 8)]",  # h0 is left to its default, as KernelBench does
    )
    analysis = analyze_problem(path)
    assert analysis.trace_method == "export", analysis.notes
    matmuls = [op for op in analysis.ops if op.op_class == OpClass.MATMUL]
    bias_adds = sum(math.prod(op.output_shape or []) for op in matmuls if op.target == "aten.addmm.default")
    steps, gates = 3 * 5, 4
    per_step = 2 * 2 * gates * 16 * ((8 + 16) + (32 + 16))  # 2 directions, 2 layers
    assert sum(op.flops for op in matmuls) - bias_adds == steps * per_step
    assert {OpClass.MATMUL, OpClass.ELEMENTWISE} <= set(analysis.op_classes)
    assert [o.shape for o in analysis.outputs] == [[3, 32], [4, 3, 16]]
