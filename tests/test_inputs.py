"""egg.inputs: one way a written problem file draws its inputs (graph and live-module problems)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from torch import nn

from egg.inputs import input_spec, inputs_source, make_inputs
from egg.live import INPUTS_FILE, write_live_problem


def test_drawn_inputs_keep_strides_dtypes_integer_ranges_and_scalars() -> None:
    examples = [torch.randn(4, 6).t(), torch.randint(3, 7, (50,)), torch.rand(5) > 0.5, 0.5, None]
    drawn = make_inputs([input_spec(v) for v in examples])
    assert drawn[0].shape == (6, 4) and drawn[0].stride() == examples[0].stride()
    assert drawn[1].dtype == torch.int64 and 3 <= int(drawn[1].min()) and int(drawn[1].max()) <= 6
    assert drawn[2].dtype == torch.bool
    assert drawn[3:] == [0.5, None]
    assert not torch.equal(make_inputs([input_spec(examples[0])])[0], drawn[0])  # fresh values each call


def test_the_emitted_source_needs_nothing_but_torch_and_keeps_the_users_names() -> None:
    source = inputs_source([input_spec(torch.zeros(2, 3)), input_spec(7)], prefix="_egg_")
    namespace = {"torch": torch, "make_inputs": "the user's own"}
    exec(compile(source, "problem.py", "exec"), namespace)  # noqa: S102 - our own generated source
    x, seven = namespace["get_inputs"]()
    assert x.shape == (2, 3) and seven == 7 and namespace["make_inputs"] == "the user's own"


class _Scale(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(3))

    def forward(self, x: torch.Tensor, k: int) -> torch.Tensor:
        return x * self.weight * k


def test_a_live_problem_draws_inputs_without_its_json(tmp_path: Path) -> None:
    path = write_live_problem(_Scale(), [torch.randn(3, 5).t(), 2], tmp_path)
    (tmp_path / INPUTS_FILE).unlink()  # written for people and tools only: the file has its own copy
    spec = importlib.util.spec_from_file_location("live_problem", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    x, k = module.get_inputs()
    assert x.shape == (5, 3) and x.stride() == (1, 5) and k == 2
    assert torch.equal(module.Model()(x, k), x * 2)
