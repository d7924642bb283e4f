"""Small KernelBench-format problems, written to tmp_path, for the analysis tests."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

ProblemWriter = Callable[..., Path]

_TEMPLATE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

{constants}

class Model(nn.Module):
    def __init__(self, *args):
        super().__init__()
{init}

    def forward(self, {params}):
{body}


def get_inputs():
    return {inputs}


def get_init_inputs():
    return {init_inputs}
'''


@pytest.fixture
def write_problem(tmp_path: Path) -> ProblemWriter:
    """``write_problem("x, y: return x + y", inputs="[...]")``: forward's arguments, then body."""

    def write(
        forward: str,
        *,
        inputs: str,
        init: str = "",
        init_inputs: str = "[]",
        constants: str = "",
        name: str = "problem",
    ) -> Path:
        params, _, body = forward.partition(":")
        body = body if body.startswith("\n") else body.lstrip()
        source = _TEMPLATE.format(
            constants=constants,
            init=textwrap.indent(textwrap.dedent(init) if init.strip() else "pass", " " * 8),
            params=params,
            body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8),
            inputs=inputs,
            init_inputs=init_inputs,
        )
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        return path

    return write
