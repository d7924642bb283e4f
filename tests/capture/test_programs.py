"""KernelBench-style programs: scalars, constructor arguments, buffers, outputs, constants, errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from capture_helpers import assert_canonical, assert_computes_like_eager
from egg.capture import CaptureError, capture_problem
from egg.errors import EggInputError

ProblemWriter = Callable[..., Path]  # the write_problem fixture (tests/conftest.py)


def test_scalar_forward_arguments_are_specialised(write_problem: ProblemWriter) -> None:
    path = write_problem(
        """x, dim, scale, flag:
        y = x * scale
        if flag:
            y = y.sum(dim=dim)
        return y
        """,
        inputs="[torch.randn(4, 6), 1, 0.5, True]",
    )
    captured = assert_computes_like_eager(path, "default")
    assert [(g.name, g.kind, g.target) for g in captured.inputs] == [("x", "user_input", 0)]
    assert any("scalar inputs specialised: dim=1, scale=0.5, flag=True" in n for n in captured.notes)
    assert captured.op_counts() == {"aten.mul.Tensor": 1, "aten.sum.dim_IntList": 1}


def test_constructor_arguments_and_parameter_fqns(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x: return self.blocks[1](torch.tanh(self.blocks[0](x)))",
        init="self.blocks = nn.ModuleList([nn.Linear(args[0], args[1]), nn.Linear(args[1], 3)])",
        inputs="[torch.randn(5, 8)]",
        init_inputs="[8, 16]",
    )
    captured = assert_computes_like_eager(path, "default")
    assert [(g.kind, g.target, g.shape) for g in captured.inputs] == [
        ("parameter", "blocks.0.weight", (16, 8)),
        ("parameter", "blocks.0.bias", (16,)),
        ("parameter", "blocks.1.weight", (3, 16)),
        ("parameter", "blocks.1.bias", (3,)),
        ("user_input", 0, (5, 8)),
    ]
    assert captured.op_counts()["aten.addmm.default"] == 2


def test_batch_norm_in_training_mode_updates_its_buffers(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x: return torch.relu(self.bn(x))",
        init="self.bn = nn.BatchNorm2d(4)",
        inputs="[torch.randn(2, 4, 5, 5) * 3 + 1]",
    )
    captured = assert_computes_like_eager(path, "default")  # checks the buffers too
    assert set(captured.mutations) == {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}
    returned = {n.name for n in next(n for n in captured.gm.graph.nodes if n.op == "output").args[0]}
    assert set(captured.mutations.values()) <= returned
    kinds = {g.target: g.kind for g in captured.inputs}
    assert kinds["bn.running_mean"] == "buffer" and kinds["bn.weight"] == "parameter"
    assert {"aten.var.correction", "aten.mean.dim"} <= set(captured.op_counts())


def test_integer_inputs_and_structured_outputs(write_problem: ProblemWriter) -> None:
    path = write_problem(
        """ids, x:
        rows = self.table[ids]
        return {"rows": rows, "pair": (rows.sum(-1), torch.argmax(x, dim=-1))}
        """,
        init="self.table = nn.Parameter(torch.randn(10, 4))",
        inputs="[torch.randint(0, 10, (3, 5)), torch.randn(3, 7)]",
    )
    captured = assert_computes_like_eager(path, "default", exact=True)
    ids = captured.inputs[1]
    assert (ids.kind, ids.target, ids.dtype, ids.shape) == ("user_input", 0, torch.int64, (3, 5))
    assert len(captured.outputs) == 3
    assert captured.out_spec.type is dict and captured.out_spec.context == ["rows", "pair"]


def test_python_branches_on_shapes_capture(write_problem: ProblemWriter) -> None:
    path = write_problem(
        """x:
        if x.shape[0] > 2:
            x = self.linear(x)
        for _ in range(x.shape[-1] // 3):
            x = torch.relu(x) - 0.1
        return x
        """,
        init="self.linear = nn.Linear(8, 6)",
        inputs="[torch.randn(4, 8)]",
    )
    captured = assert_computes_like_eager(path, "default")
    assert captured.op_counts()["aten.relu.default"] == 2  # unrolled for the traced shape


def test_tensor_constants_keep_their_names_and_values(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x: return torch.relu(x) * self.mask + torch.tensor([1.0, 2.0, 3.0, 4.0])",
        init="self.mask = torch.tril(torch.ones(4, 4))",  # a plain attribute, not a buffer
        inputs="[torch.randn(4, 4)]",
    )
    captured = assert_computes_like_eager(path, "default")
    constants = [(g.kind, g.target, g.value) for g in captured.inputs if g.kind == "constant"]
    assert constants[0] == ("constant", "mask", None)  # built on fake tensors: resolved by name
    assert constants[1][1] == "lifted_tensor_0"
    assert torch.equal(constants[1][2], torch.tensor([1.0, 2.0, 3.0, 4.0]))


def test_models_that_need_real_values_are_built_for_real(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "x: return x * self.k",
        init="self.k = float(torch.randn(()).abs().item()) + 1.0",  # a value, not a shape
        inputs="[torch.randn(3)]",
    )
    captured = assert_computes_like_eager(path, "default")
    assert any("built with real tensors" in n for n in captured.notes)


def test_split_chunk_and_unbind_are_slices(write_problem: ProblemWriter) -> None:
    path = write_problem(
        """x:
        a, b = x.chunk(2, dim=-1)
        c, d, e = torch.split(x, [1, 2, 3], dim=-1)
        first, *_ = x.unbind(0)
        return a * b + c.sum(-1, keepdim=True) + d.mean(-1, keepdim=True) * e[..., :1], first
        """,
        inputs="[torch.randn(4, 6)]",
    )
    captured = assert_computes_like_eager(path, "default")
    ops = captured.op_counts()
    assert ops["aten.slice.Tensor"] == 2 + 3 + 1 + 1  # chunk, split, unbind (kept piece), e[..., :1]
    assert ops["aten.squeeze.dims"] == 1  # unbind's piece loses its dim
    assert not {"aten.split_with_sizes.default", "aten.as_strided.default", "getitem"} & set(ops)


def test_exact_rewrites_change_no_bit(write_problem: ProblemWriter) -> None:
    path = write_problem(
        """x, h:
        a = x.pow(2) + x.pow(0.5) * x.pow(-1)
        b = (x + 1).pow(-0.5) + x.pow(3)
        c = h.float().half() * 1.0 + h.to(torch.float16).clone() / 1
        return a + b, c.float().half()
        """,
        inputs="[torch.rand(8, 16) + 0.1, torch.randn(8, 16).half()]",
    )
    captured = assert_computes_like_eager(path, "default", exact=True)
    ops = captured.op_counts()
    assert "aten.pow.Tensor_Scalar" not in ops
    assert {"aten.sqrt.default", "aten.rsqrt.default", "aten.reciprocal.default"} <= set(ops)
    assert not {"aten.clone.default", "aten._to_copy.default"} & set(ops)  # c is h + h
    assert ops["aten.mul.Tensor"] == 4  # x*x, (x*x)*x (two), sqrt * reciprocal


def test_half_precision_pow_cube_is_left_alone(write_problem: ProblemWriter) -> None:
    # CPU pow computes x**3 of fp16 in fp32 and rounds once; x*x*x would round twice.
    path = write_problem("x: return x.pow(3)", inputs="[torch.randn(8, 16).half()]")
    captured = assert_computes_like_eager(path, "default", exact=True)
    assert captured.op_counts() == {"aten.pow.Tensor_Scalar": 1}


def test_in_place_fills_become_slice_scatters_of_broadcast_values(write_problem: ProblemWriter) -> None:
    # functionalisation turns ``y[::4] = v`` into slice + copy + slice_scatter; ``copy`` is not core
    # ATen (Inductor lowers it), so the capture decomposes it: the fill is index arithmetic
    path = write_problem(
        """x, v, w:
        y = x.clone()
        y[::4] = v
        y[:, 1:3] = w
        return y * 2
        """,
        inputs="[torch.randn(9, 6), torch.randn(6), torch.randn(9, 1).half()]",
    )
    captured = assert_computes_like_eager(path, "default", exact=True)
    assert_canonical(captured)
    ops = captured.op_counts()
    assert "aten.copy.default" not in ops
    assert ops["aten.slice_scatter.default"] == 2 and "aten._to_copy.default" in ops  # w is fp16


def test_attention_stays_one_node(write_problem: ProblemWriter) -> None:
    path = write_problem(
        "q, k, v: return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)",
        inputs="[torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8)]",
    )
    captured = assert_computes_like_eager(path, "default")
    assert captured.op_counts() == {
        "aten.scaled_dot_product_attention.default": 1,
        "aten.permute.default": 1,
    }
    assert_canonical(captured)


# ---------------------------------------------------------------- declines and user errors


def test_value_dependent_control_flow_is_a_one_line_capture_error(write_problem: ProblemWriter) -> None:
    path = write_problem(
        """x:
        if x.sum() > 0:
            return torch.relu(x)
        return -x
        """,
        inputs="[torch.randn(4, 8)]",
    )
    with pytest.raises(CaptureError) as caught:
        capture_problem(path)
    reason = str(caught.value)
    assert "\n" not in reason
    assert "depends on tensor values at problem.py:" in reason and "if x.sum() > 0:" in reason


MIXTRAL_MOE = """import torch
import torch.nn as nn
from transformers import MixtralConfig
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = MixtralConfig(hidden_size=64, intermediate_size=128, num_local_experts=4, num_experts_per_tok=2)
        self.moe = MixtralSparseMoeBlock(config).eval()

    def forward(self, x):
        out = self.moe(x)
        return out[0] if isinstance(out, tuple) else out


def get_inputs():
    return [torch.randn(2, 16, 64)]


def get_init_inputs():
    return []
"""


def test_a_mixture_of_experts_routing_loop_is_a_one_line_capture_error(tmp_path: Path) -> None:
    """Met on a real module (transformers' Mixtral sparse MoE block): it loops over the experts that
    some token was routed to, a count known only from the router's values. Declined in one line
    that names transformers' own file, not a traceback."""
    path = tmp_path / "mixtral_moe.py"
    path.write_text(MIXTRAL_MOE)
    with pytest.raises(CaptureError) as caught:
        capture_problem(path)
    reason = str(caught.value)
    assert "\n" not in reason
    assert "depends on tensor values at modeling_mixtral.py:" in reason, reason


def test_import_and_build_failures_are_capture_errors(write_problem: ProblemWriter, tmp_path: Path) -> None:
    broken = write_problem("x: return x", inputs="[torch.randn(2)]", constants="import no_such_module")
    with pytest.raises(CaptureError, match="importing problem.py failed: ModuleNotFoundError"):
        capture_problem(broken)
    failing = write_problem(
        "x: return x", init="raise RuntimeError('no weights here')", inputs="[torch.randn(2)]",
        name="failing",
    )
    with pytest.raises(CaptureError, match="building Model/inputs of failing failed: RuntimeError: no weights"):
        capture_problem(failing)


def test_unknown_shape_set_is_a_user_error(fixtures_dir: Path) -> None:
    with pytest.raises(EggInputError, match="huge"):
        capture_problem(fixtures_dir / "problems" / "add_relu.py", shape_set="huge")


def test_data_dependent_output_shapes_are_noted(write_problem: ProblemWriter) -> None:
    path = write_problem("x: return torch.exp(x[x > 0])", inputs="[torch.randn(64)]")
    captured = capture_problem(path)
    assert any("data-dependent sizes" in n and "index" in n for n in captured.notes)


def test_models_that_convert_their_dtype_in_init_stay_fake(write_problem: ProblemWriter) -> None:
    # Module.to() on fake parameters fails (they cannot be swapped); the meta device takes it.
    path = write_problem(
        "x: return self.linear(x)",
        init="self.linear = nn.Linear(8192, 8192).to(torch.float16)",  # 128 MiB if it were real
        inputs="[torch.randn(2, 8192).half()]",
    )
    captured = capture_problem(path)
    assert not [n for n in captured.notes if "real tensors" in n], captured.notes
    weight = next(g for g in captured.inputs if g.target == "linear.weight")
    assert (weight.dtype, weight.shape, weight.value) == (torch.float16, (8192, 8192), None)
