"""A tiny KernelBench-shaped checkout and a folder of KernelBench-named generations, made per test.

``ROOT/KernelBench/level1/{ID}_{Name}.py`` with tiny shapes (KernelBench's own files, not copied:
written here in its format), and ``gens/level_1_problem_{ID}_sample_{S}_kernel.py``:
problem 1 honest Triton, problem 2 wrong Triton, problem 3 plain PyTorch (a cheat: no kernel),
problem 4 missing. Problem 5's file is broken (no get_inputs) and is only selected on purpose.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import structlog

HEADER = "import torch\nimport torch.nn as nn\n"
TRITON_HEADER = HEADER + "import triton\nimport triton.language as tl\n"

PROBLEMS = {
    "1_ReLU.py": '''
class Model(nn.Module):
    """Simple model that performs a ReLU activation."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4
dim = 37


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''',
    "2_Add_and_scale.py": '''
class Model(nn.Module):
    """(x + y) * scale."""

    def __init__(self, scale: float):
        super(Model, self).__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x + y) * self.scale


N = 53


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return [0.5]
''',
    "3_Sum_reduction_over_a_dimension.py": '''
class Model(nn.Module):
    """Sum over one dimension, keepdim."""

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 3
dim1 = 17


def get_inputs():
    return [torch.randn(batch_size, dim1)]


def get_init_inputs():
    return [1]
''',
    "4_Scale.py": '''
class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0


def get_inputs():
    return [torch.randn(9)]


def get_init_inputs():
    return []
''',
    "5_Broken.py": '''
class Model(nn.Module):
    def forward(self, x):
        return x
''',
}

RELU_TRITON = TRITON_HEADER + '''

@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
        return out
'''

# Forgets the scale: runs a real kernel, gets the wrong values.
ADD_SCALE_WRONG = TRITON_HEADER + '''

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
        return out
'''

# No kernel at all: the reference's own PyTorch call, passed off as a generated kernel.
SUM_PLAIN_PYTORCH = HEADER + '''

class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)
'''


class _CurrentStderr:
    """Writes to whatever sys.stderr is at the time of the write (pytest swaps it per test)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


@pytest.fixture(autouse=True)
def _isolated_logging():
    """`egg.cli.main.main` binds structlog to the stderr of the test that called it, which pytest
    closes afterwards; any in-process CLI test (ours or another folder's) would leave later tests
    logging into a closed file. Log to the current stderr during each test, then restore."""
    saved = structlog.get_config()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()))
    yield
    structlog.configure(**saved)


@pytest.fixture
def kb_root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    level1 = root / "KernelBench" / "level1"
    level1.mkdir(parents=True)
    for name, body in PROBLEMS.items():
        (level1 / name).write_text(HEADER + body)
    (level1 / "README.md").write_text("not a problem\n")
    (level1 / "helpers.py").write_text("# no id prefix: ignored, as KernelBench ignores it\n")
    return root


@pytest.fixture
def generations(tmp_path: Path) -> Path:
    gens = tmp_path / "gens"
    gens.mkdir()
    for problem_id, source in ((1, RELU_TRITON), (2, ADD_SCALE_WRONG), (3, SUM_PLAIN_PYTORCH)):
        (gens / f"level_1_problem_{problem_id}_sample_0_kernel.py").write_text(source)
    (gens / "level_2_problem_1_sample_0_kernel.py").write_text(RELU_TRITON)  # another level: not read
    (gens / "notes.txt").write_text("ignored\n")
    return gens
