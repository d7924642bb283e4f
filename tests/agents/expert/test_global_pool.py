"""Global adaptive pools (output size 1 in every spatial dim) are spatial mean/amax reductions, so
a reduction template computes them with the elementwise ops around them (KernelBench level2/8,
67, 77, 96: ``AdaptiveAvgPool3d((1, 1, 1))`` / ``adaptive_avg_pool2d(x, 1)``). Every draft must
be accepted by the real harness (CPU); pools to any other size stay torch calls.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agents.expert.agents import ExpertDesigner
from agents.expert.codegen import analyse
from agents.protocol import AgentTask
from egg.evaluate.harness import EvalOptions, Harness
from egg.vocabulary import Backend, Focus, Stage

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::RuntimeWarning")

PROBLEMS: dict[str, tuple[str, list[tuple[str, list[str]]]]] = {
    # level2/96: scale -> (max pool) -> global average pool -> clamp
    "avg3d_clamp": ("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = nn.AdaptiveAvgPool3d((1, 1, 1))

            def forward(self, x):
                x = x * 0.5
                x = self.pool(x)
                return torch.clamp(x, min=-0.05, max=0.05)

        def get_inputs():
            return [torch.randn(2, 3, 5, 7, 9)]

        def get_init_inputs():
            return []
        """, [("reduce_basic", ["mul", "mean", "clamp"])]),
    # level2/67: gelu -> functional global average pool -> squeeze
    "avg2d_functional": ("""
        class Model(nn.Module):
            def forward(self, x):
                x = F.gelu(x)
                x = F.adaptive_avg_pool2d(x, 1)
                return x.squeeze(-1).squeeze(-1)

        def get_inputs():
            return [torch.randn(3, 5, 11, 13)]

        def get_init_inputs():
            return []
        """, [("reduce_basic", ["gelu", "mean"])]),
    "max1d_unbatched": ("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = nn.AdaptiveMaxPool1d(1)

            def forward(self, x):
                return torch.relu(self.pool(x - 0.25))

        def get_inputs():
            return [torch.randn(7, 37)]

        def get_init_inputs():
            return []
        """, [("reduce_basic", ["sub", "amax", "relu"])]),
}


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return path


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_global_pool_fuses_and_is_accepted(name: str, harness: Harness, tmp_path: Path) -> None:
    body, expected = PROBLEMS[name]
    path = write(tmp_path, name, body)
    groups = analyse(path).variant("fused").groups
    assert [(g.template.name, [n.op for n in g.spec.nodes]) for g in groups] == expected
    task = AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="",
                     stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, backend=Backend.TRITON, parent=None,
                     round=1, agent_name="expert")
    designer = ExpertDesigner(device="cpu")
    drafts = designer.propose(task)
    assert drafts, designer.last_errors
    for i, draft in enumerate(drafts):  # chains-only writes the reference's own pool call back
        where = tmp_path / f"draft{i}"
        where.mkdir()
        candidate = where / "candidate.py"
        candidate.write_text(draft.source)
        verdict = harness.evaluate(path, candidate, EvalOptions(device="cpu", timeout_s=300, trials=2, timing_runs=1, warmup_runs=0), where)
        assert verdict.accepted, f"{draft.structure}: {verdict.stage_failed}: {verdict.reasons}"


def test_adaptive_pool_to_other_sizes_stays_torch(tmp_path: Path) -> None:
    path = write(tmp_path, "avg_to_2", """
        class Model(nn.Module):
            def forward(self, x):
                return torch.tanh(F.adaptive_avg_pool2d(x * 2.0, 2))

        def get_inputs():
            return [torch.randn(2, 3, 8, 6)]

        def get_init_inputs():
            return []
        """)
    program = analyse(path)
    lowered = next(lw for lw in program.low.values() if lw.key == "adaptive_avg_pool2d")
    assert lowered.steps[0].op == "adaptive_avg_pool2d"
    assert all(g.template.name == "elementwise" for v in program.variants for g in v.groups)
