"""Stage-2 configs of the reduction templates stay valid kernels, judged by the real harness (CPU).

A tuner move changes one parameter of a parent config; every other value (chosen by the default
heuristic for the parent's structure) is kept. The templates must turn such a mix into tiles a
GPU can compile: Triton rejects a block of more than 2**20 elements, and a [2048, 256] fp32
accumulator pair compiles for minutes. Found by a full-size sm_90 compile of every single-move
config of the KernelBench sample (level2/41 Gemm_BatchNorm_GELU_ReLU, level2/51
Gemm_Subtract_GlobalAvgPool_LogSumExp_GELU_ResidualAdd); the tiny problems below reproduce the
oversized tiles in the interpreter, which enforces the same 2**20 limit.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from agents.expert.codegen import analyse, read_config, render
from agents.expert.tuning import moves
from egg.evaluate.harness import EvalOptions, Harness
from egg.vocabulary import Focus

HEADER = "import torch\nimport torch.nn as nn\n\n"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::RuntimeWarning")


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def accepted(harness: Harness, problem: Path, source: str, where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    candidate = where / "candidate.py"
    candidate.write_text(source)
    verdict = harness.evaluate(problem, candidate, EvalOptions(device="cpu", timeout_s=300, trials=2, timing_runs=1, warmup_runs=0), where)
    assert verdict.accepted, f"{verdict.stage_failed}: {verdict.reasons}"


def config_of(source: str, launcher: str) -> dict[str, Any]:
    config = read_config(source)
    assert config is not None
    return config.by_launcher()[launcher]


def test_logsumexp_online_move_keeps_tiles_small(harness: Harness, tmp_path: Path) -> None:
    """logsumexp over a size-1 dim (level2/51's GlobalAvgPool -> LogSumExp): one_pass packs 512
    rows per program; the tuner's ``structure -> online`` move kept those 512 rows with online's
    4096-wide chunk, a [512, 4096] tile. Online chunks now stop at the reduced extent and the
    tile at ``max_block`` elements."""
    path = write(tmp_path, "lse", """
        class Model(nn.Module):
            def forward(self, x):
                x = torch.mean(x, dim=1, keepdim=True)
                return torch.logsumexp(x, dim=1, keepdim=True)

        def get_inputs():
            return [torch.rand(301, 7)]

        def get_init_inputs():
            return []
        """)
    program = analyse(path)
    variant = program.variant("fused")
    (lse,) = [g for g in variant.groups if g.template.name == "reduce_softmax"]
    parent = render(program, variant, "cuda")
    current = parent.config.by_launcher()
    assert current[lse.launcher]["structure"] == "one_pass" and current[lse.launcher]["block_m"] >= 512
    online = [m for m in moves(program, variant, current, Focus.PARALLEL_MAPPING, "cuda")
              + moves(program, variant, current, Focus.TILING, "cuda")
              if m.launcher == lse.launcher and m.param == "structure"]
    assert [m.new for m in online] == ["online"]
    overrides = {k: dict(v) for k, v in current.items()}
    overrides[lse.launcher]["structure"] = "online"
    accepted(harness, path, render(program, variant, "cuda", overrides).source, tmp_path / "online")


def test_batch_norm_block_s_move_keeps_tiles_small(harness: Harness, tmp_path: Path) -> None:
    """BatchNorm1d (S = 1, level2/41): the default [block_c 2048, block_s 1] statistics tile;
    the tuner offered block_s 256/1024/2048 with block_c kept at 2048 ([2048, 1024] does not
    compile). block_s past the spatial extent is no longer offered, and block_c follows a given
    block_s so the tile stays 2048 elements; a BatchNorm2d whose spatial extent does take the
    tuner's block_s is accepted by the harness with that move."""
    path = write(tmp_path, "bn1d", """
        class Model(nn.Module):
            def __init__(self, features):
                super().__init__()
                self.bn = nn.BatchNorm1d(features)

            def forward(self, x):
                return torch.relu(self.bn(x))

        def get_inputs():
            return [torch.randn(3, 1025)]

        def get_init_inputs():
            return [1025]
        """)
    program = analyse(path)
    variant = program.variant("fused")
    (bn,) = variant.groups
    assert bn.template.name == "reduce_norm"
    assert bn.template.tuning_space(bn.spec)["block_s"] == []
    current = render(program, variant, "cuda").config.by_launcher()
    assert (current[bn.launcher]["block_s"], current[bn.launcher]["block_c"]) == (1, 2048)
    assert not [m for m in moves(program, variant, current, Focus.TILING, "cuda") if m.param == "block_s"]
    for block_s, block_c in ((1024, 2), (2048, 1)):  # a parent config from elsewhere (an older space)
        overrides = {k: dict(v) for k, v in current.items()}
        overrides[bn.launcher]["block_s"] = block_s
        assert config_of(render(program, variant, "cuda", overrides).source, bn.launcher)["block_c"] == block_c

    path = write(tmp_path, "bn2d", """
        class Model(nn.Module):
            def __init__(self, features):
                super().__init__()
                self.bn = nn.BatchNorm2d(features)

            def forward(self, x):
                return torch.tanh(self.bn(x))

        def get_inputs():
            return [torch.randn(2, 5, 15, 20)]

        def get_init_inputs():
            return [5]
        """)
    program = analyse(path)
    variant = program.variant("fused")
    (bn,) = variant.groups
    assert bn.template.tuning_space(bn.spec)["block_s"] == [256]  # S = 300
    current = render(program, variant, "cuda").config.by_launcher()
    (move,) = [m for m in moves(program, variant, current, Focus.TILING, "cuda") if m.param == "block_s"]
    overrides = {k: dict(v) for k, v in current.items()}
    overrides[bn.launcher]["block_s"] = move.new
    rendered = render(program, variant, "cuda", overrides)
    assert config_of(rendered.source, bn.launcher)["block_c"] * move.new <= 2048
    accepted(harness, path, rendered.source, tmp_path / "block_s")
