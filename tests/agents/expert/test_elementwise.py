"""The elementwise template on hand-built groups: addressing modes, dtypes, configs (interpreter)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import torch

from agents.expert.emit import IMPORTS
from agents.expert.kernels.base import GroupSpec, NodeSpec, ValueSpec
from agents.expert.kernels.elementwise import ElementwiseTemplate
from agents.expert.kernels.expr import helper_source

TEMPLATE = ElementwiseTemplate()


def tensor(name: str, t: torch.Tensor) -> ValueSpec:
    return ValueSpec(name=name, shape=list(t.shape), dtype=str(t.dtype).removeprefix("torch."))


def node(name: str, op: str, operands: list[Any], shape: list[int], dtype: str = "float32", **kwargs: Any) -> NodeSpec:
    return NodeSpec(name=name, op=op, operands=operands, kwargs=kwargs, shape=shape, dtype=dtype)


def load(group: GroupSpec, tmp_path: Path, config: dict[str, Any] | None = None, launcher: str = "fused") -> Any:
    plan = TEMPLATE.render(group, {**TEMPLATE.default_config(group, "cpu"), **(config or {})}, launcher)
    path = tmp_path / f"{launcher}_{abs(hash(plan.source))}.py"
    path.write_text(IMPORTS + "\n" + helper_source(plan.source) + "\n" + plan.source + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, launcher)


def bias_scale_group(x: torch.Tensor, bias: torch.Tensor, s: torch.Tensor) -> GroupSpec:
    shape = list(x.shape)
    return GroupSpec(
        inputs=[tensor("x", x), tensor("bias", bias), tensor("s", s), ValueSpec(name="k", is_tensor=False, dtype="int", value=3)],
        nodes=[node("add", "add", ["x", "bias"], shape), node("mul", "mul", ["add", "s"], shape),
               node("sub", "sub", ["mul", "k"], shape), node("relu", "relu", ["sub"], shape),
               node("out", "leaky_relu", ["relu"], shape, negative_slope=0.2)],
        output="out",
    )


@pytest.mark.parametrize("config", [{}, {"PERSISTENT": True, "BLOCK": 64}, {"EVICT_STREAMING": "evict_first",
                                                                         "EVICT_BROADCAST": "evict_last", "BLOCK": 256}])
def test_flat_scalar_and_strided_inputs(tmp_path: Path, config: dict[str, Any]) -> None:
    x, bias, s = torch.randn(3, 4, 5, 7), torch.randn(4, 1, 1), torch.tensor(1.7)
    launch = load(bias_scale_group(x, bias, s), tmp_path, config)
    expected = torch.nn.functional.leaky_relu(torch.relu((x + bias) * s - 3), 0.2)
    torch.testing.assert_close(launch(x, bias, s, 3), expected)
    # other sizes than the traced ones, and a non-contiguous x (STRIDED instead of FLAT)
    x2 = torch.randn(2, 4, 9, 3).transpose(2, 3)
    torch.testing.assert_close(launch(x2, bias, s, 5),
                               torch.nn.functional.leaky_relu(torch.relu((x2 + bias) * s - 5), 0.2))


def test_flat_inputs_launch_the_kernel_without_strides(tmp_path: Path) -> None:
    # every launch argument costs host time on each call: with only FLAT/SCALAR inputs the launcher
    # calls a kernel that takes no sizes or strides (24 fewer arguments for these three tensors)
    x, full, s = torch.randn(3, 4, 5, 7), torch.randn(3, 4, 5, 7), torch.tensor(1.7)
    launch = load(bias_scale_group(x, full, s), tmp_path)
    module = launch.__globals__
    flat, strided = module["_fused_kernel_flat"], module["_fused_kernel"]
    assert len(flat.arg_names) == len(strided.arg_names) - 6 - 3 * 6 - 1  # sizes, strides, STRIDED
    calls: list[str] = []

    class Recorded:  # the generated launcher indexes its kernel by grid: note which one, then launch it
        def __init__(self, name: str, kernel: Any) -> None:
            self.name, self.kernel = name, kernel

        def __getitem__(self, grid: Any) -> Any:
            calls.append(self.name)
            return self.kernel[grid]

    module["_fused_kernel_flat"], module["_fused_kernel"] = Recorded("flat", flat), Recorded("strided", strided)
    torch.testing.assert_close(launch(x, full, s, 3), torch.nn.functional.leaky_relu(torch.relu((x + full) * s - 3), 0.2))
    launch(x, torch.randn(4, 1, 1), s, 3)
    assert calls == ["flat", "strided"]


def test_row_vector_and_rank7_broadcast(tmp_path: Path) -> None:
    x, row = torch.randn(2, 1, 3, 1, 2, 3, 5), torch.randn(5)
    y = torch.randn(1, 2, 1, 4, 1, 1, 1)
    shape = [2, 2, 3, 4, 2, 3, 5]
    group = GroupSpec(inputs=[tensor("x", x), tensor("row", row), tensor("y", y)],
                      nodes=[node("a", "mul", ["x", "row"], [2, 1, 3, 1, 2, 3, 5]), node("b", "add", ["a", "y"], shape)],
                      output="b")
    launch = load(group, tmp_path)
    torch.testing.assert_close(launch(x, row, y), x * row + y)


def test_fp16_inputs_with_fp32_promotion_and_rounding(tmp_path: Path) -> None:
    x, y = torch.randn(33, 17).half(), torch.randn(33, 17)
    group = GroupSpec(inputs=[tensor("x", x), tensor("y", y)],
                      nodes=[node("g", "gelu", ["x"], [33, 17], "float16", approximate="tanh"),
                             node("h", "mul", ["g", 3.0], [33, 17], "float16"),
                             node("o", "add", ["h", "y"], [33, 17], "float32")],
                      output="o")
    out = load(group, tmp_path)(x, y)
    assert out.dtype == torch.float32
    g = torch.nn.functional.gelu(x, approximate="tanh")
    diff = (out - (g * 3.0 + y)).abs()
    # every op rounds to fp16 as torch does, so almost all elements match exactly; the kernel's tanh
    # and torch's differ in the last fp32 bits, which can flip one fp16 rounding of g (seen on
    # 1 of the 561 elements in about one run of eight): never more than one fp16 ulp of g, times 3
    assert (diff <= 3.0 * g.float().abs() * 2.0**-10 + 1e-6).all(), diff.max()
    assert (diff > 0).float().mean() < 0.01


def test_bool_inputs_and_outputs(tmp_path: Path) -> None:
    x, m = torch.randn(10, 11), torch.rand(10, 11) > 0.5
    group = GroupSpec(inputs=[tensor("x", x), tensor("m", m)],
                      nodes=[node("gt", "gt", ["x", 0.0], [10, 11], "bool"),
                             node("both", "logical_and", ["gt", "m"], [10, 11], "bool")],
                      output="both")
    out = load(group, tmp_path)(x, m)
    assert out.dtype == torch.bool and torch.equal(out, (x > 0) & m)


def test_empty_output_and_odd_sizes(tmp_path: Path) -> None:
    x = torch.randn(0, 5)
    group = GroupSpec(inputs=[tensor("x", x)], nodes=[node("o", "exp", ["x"], [0, 5])], output="o")
    launch = load(group, tmp_path, {"BLOCK": 128})
    assert launch(x).shape == (0, 5)
    odd = torch.randn(1031)
    torch.testing.assert_close(launch(odd), odd.exp())


def test_match_rejects_what_it_cannot_compute() -> None:
    ints = torch.arange(6)
    group = GroupSpec(inputs=[tensor("i", ints)], nodes=[node("o", "relu", ["i"], [6], "int64")], output="o")
    assert not TEMPLATE.match(group)
    x = torch.randn(4)
    drop = GroupSpec(inputs=[tensor("x", x)], nodes=[node("o", "dropout", ["x"], [4], p=0.5, training=True)], output="o")
    assert "random" in (TEMPLATE.why_not(drop) or "")
    assert not TEMPLATE.match(drop.model_copy(update={"kind": "reduction"}))


def test_configs_and_tuning_space() -> None:
    big = GroupSpec(inputs=[ValueSpec(name="x", shape=[4096, 4096])],
                    nodes=[node("o", "relu", ["x"], [4096, 4096])], output="o")
    gpu = TEMPLATE.default_config(big, "cuda")
    assert gpu["BLOCK"] == 1024 and gpu["num_warps"] == 4 and gpu["EVICT_STREAMING"] == "evict_first"
    assert TEMPLATE.default_config(big, "cpu")["BLOCK"] == 4096
    space = TEMPLATE.tuning_space(big)
    assert all(gpu[k] in v for k, v in space.items())
    plan = TEMPLATE.render(big, gpu, "fused_relu")
    assert "def _fused_relu_kernel(" in plan.source and plan.config == {k: gpu[k] for k in space}
    assert "memory/eviction-hints" in plan.principle_ids
