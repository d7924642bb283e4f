"""Whole-workload fusion of the expert codegen, judged by the real harness on CPU.

The shipped workloads (``workloads/*.py``) run bf16 at their ``odd`` shape set; the Triton CPU
interpreter's bf16 arithmetic is wrong, so tests use a copy whose ``odd`` set is float16 (same
casts, same sizes, and the interpreter computes fp16 exactly).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from expert_helpers import WORKLOADS, accepted, designs, fp16_copy

from agents.expert.codegen import analyse, read_config
from egg.evaluate.harness import Harness


@pytest.mark.parametrize("shape_set", ["small", "odd"])
def test_hand_written_rms_norm_is_one_kernel(shape_set: str, harness: Harness, tmp_path: Path) -> None:
    path = fp16_copy("rms_norm", tmp_path)
    program = analyse(path, shape_set)
    (group,) = program.variant("fused").groups
    assert group.template.name == "reduce_norm"
    assert [n.op for n in group.spec.nodes] == ["to", "rms_norm", "to", "mul"]
    drafts = designs(path, shape_set)
    assert read_config(drafts[0].source).variant == "fused"  # type: ignore[union-attr]
    assert len(read_config(drafts[0].source).kernels) == 1  # type: ignore[union-attr]
    for i, draft in enumerate(drafts):  # the unfused variant writes the reference's own ops back
        accepted(harness, path, draft.source, shape_set, tmp_path / f"draft{i}")


def test_rms_norm_folding_keeps_other_reductions(tmp_path: Path) -> None:
    """A mean of squares over another dim, or without keepdim, is not an RMSNorm."""
    path = tmp_path / "not_rms.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        v = x.pow(2).mean(0, keepdim=True)\n"
        "        return x * torch.rsqrt(v + 1e-6)\n\n"
        "def get_inputs():\n    return [torch.randn(8, 16)]\n\n"
        "def get_init_inputs():\n    return []\n")
    program = analyse(path)
    ops = [n.op for g in program.variants[0].groups for n in g.spec.nodes]
    assert "rms_norm" not in ops and "mean" in ops


def test_buffer_expressions_stay_attribute_reads(harness: Harness, tmp_path: Path) -> None:
    """``self.scale.unsqueeze(1)`` on a buffer is traced as a read of the buffer, not baked in
    as fx's ``_tensor_constant0`` (which declined the default shapes of the int8 workload)."""
    path = fp16_copy("int8_weight_only_linear", tmp_path)
    program = analyse(path, "default")
    assert "_tensor_constant" not in program.tp.gm.code and "self.scale" in program.tp.gm.code
    for shape_set in ("small", "odd"):
        draft = designs(path, shape_set)[0]
        assert "scale = self.scale" in draft.source.split("class ModelNew")[1]
        accepted(harness, path, draft.source, shape_set, tmp_path / shape_set)


# KernelBench level 2 #79, #80, #92 (small sizes): a group input that is both the reduced operand
# and an epilogue operand used to render a duplicate ``g_<name>_ptr`` kernel parameter.
SHARED_INPUT = {
    "instance_norm_reads_multiplier_twice": ("""
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.multiplier = nn.Parameter(torch.randn(16, 1, 1, 1))
        self.instance_norm = nn.InstanceNorm3d(16)

    def forward(self, x):
        x = x * self.multiplier
        x = self.instance_norm(x)
        x = torch.clamp(x, -1.0, 1.0)
        return x * self.multiplier
""", "torch.rand(2, 16, 4, 6, 6)", ["mul", "instance_norm", "clamp", "mul"], "reduce_norm"),
    "mean_subtracted_from_its_input": ("""
class Model(nn.Module):
    def forward(self, x):
        x = torch.max(x, dim=1, keepdim=True).values
        return torch.nn.functional.gelu(x - x.mean(dim=1, keepdim=True))
""", "torch.randn(4, 96)", ["mean", "sub", "gelu"], "reduce_basic"),
    "group_norm_residual": ("""
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.group_norm = nn.GroupNorm(4, 16)

    def forward(self, x):
        y = torch.tanh(self.group_norm(x))
        return torch.nn.functional.hardswish(y) + x
""", "torch.randn(2, 16, 5, 5)", ["group_norm", "tanh", "hardswish", "add"], "reduce_norm"),
}


@pytest.mark.parametrize("name", list(SHARED_INPUT))
def test_reduced_input_read_again_by_the_epilogue(name: str, harness: Harness, tmp_path: Path) -> None:
    body, inputs, ops, template = SHARED_INPUT[name]
    path = tmp_path / f"{name}.py"
    path.write_text("import torch\nimport torch.nn as nn\n" + body
                    + f"\n\ndef get_inputs():\n    return [{inputs}]\n\n\ndef get_init_inputs():\n    return []\n")
    groups = analyse(path).variant("fused").groups
    assert any([n.op for n in g.spec.nodes] == ops and g.template.name == template for g in groups), \
        [(g.template.name, [n.op for n in g.spec.nodes]) for g in groups]
    accepted(harness, path, designs(path, "default")[0].source, "default", tmp_path / "draft")


@pytest.mark.parametrize("shape_set", ["small", "odd"])
def test_adamw_step_is_one_multi_output_kernel(shape_set: str, harness: Harness, tmp_path: Path) -> None:
    """AdamW's three same-shape results come from one kernel (each input read once). In ``fused``
    the 0-d float64 bias corrections stay torch ops and the kernel reads them as fp32, as torch
    casts them; in ``fused-scalars`` the kernel computes them itself, in fp64: one launch."""
    path = WORKLOADS / "adamw_step.py"
    for variant in ("fused", "fused-scalars"):
        (group,) = analyse(path, shape_set).variant(variant).groups
        assert group.template.name == "elementwise"
        assert [o.name for o in group.extra_outputs] == ["lerp", "add"] and group.output.name == "sub_2"
    fused, folded = designs(path, shape_set)
    for i, draft in enumerate((fused, folded)):
        assert "sub_2, lerp, add = fused_" in draft.source
        accepted(harness, path, draft.source, shape_set, tmp_path / f"draft{i}")
    assert "step.double()" in fused.source.split("class ModelNew")[1]
    assert "fused_to_mul_lerp_add_etc(step, param" in folded.source.split("class ModelNew")[1]


MULTI_OUTPUT = {
    # y feeds both the chain and a torch op the chain does not need: one kernel, two outputs
    "two_outputs": ("""
    def forward(self, x, w):
        y = torch.relu(x * 2.0)
        z = torch.sigmoid(y) + w
        return z, y.sum()
""", 2),
    # y's other reader (softmax) feeds the chain: merging would need y before softmax -> two kernels
    "reader_feeds_the_chain": ("""
    def forward(self, x, w):
        y = torch.relu(x * 2.0)
        s = torch.softmax(y, dim=-1)
        return torch.sigmoid(y) + s * w
""", 1),
    # y has another shape than the chain's output (broadcast): not written by the same kernel
    "different_shape": ("""
    def forward(self, x, w):
        y = torch.relu(w * 2.0)
        return torch.sigmoid(x) + y, y
""", 1),
}


@pytest.mark.parametrize("name", list(MULTI_OUTPUT))
def test_multi_output_chains(name: str, harness: Harness, tmp_path: Path) -> None:
    body, outputs = MULTI_OUTPUT[name]
    path = tmp_path / f"{name}.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):" + body
                    + "\n\ndef get_inputs():\n    return [torch.randn(6, 40), torch.randn(40) if "
                    + repr(name) + " == 'different_shape' else torch.randn(6, 40)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    groups = [g for g in analyse(path).variant("fused").groups if g.kind == "elementwise_chain"]
    assert max(1 + len(g.extra_outputs) for g in groups) == outputs, [[n.op for n in g.spec.nodes] for g in groups]
    for i, draft in enumerate(designs(path, "default")):
        accepted(harness, path, draft.source, "default", tmp_path / f"draft{i}")
