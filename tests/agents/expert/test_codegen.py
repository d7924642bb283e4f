"""The expert agents end to end: KernelBench-style problems -> drafts -> the real harness (CPU).

Every draft the designer produces must be ACCEPTED by the harness (static checks, correctness
on every shape set, a Triton launch per forward); programs with nothing to fuse are declined
with a reason; a stage-2 tuner re-renders a designer draft into a different, accepted config.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agents.expert import build_expert_agents
from agents.expert.agents import CPU_NOTE, ExpertDesigner, ExpertTuner
from agents.expert.codegen import CONFIG_TAG, analyse, read_config
from agents.protocol import AgentExhausted, AgentTask, Draft
from egg.config import RunConfig
from egg.evaluate.harness import EvalOptions, Harness
from egg.problem import inspect_problem
from egg.vocabulary import Backend, Focus, Stage
from principles import load_packs

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"

PROBLEMS: dict[str, str] = {
    "relu_chain": """
        M = 37
        N = 129
        SHAPES = {"small": {"M": 5, "N": 33}}

        class Model(nn.Module):
            def forward(self, x):
                return torch.relu(x * 2 + 1)

        def get_inputs():
            return [torch.randn(M, N)]

        def get_init_inputs():
            return []
        """,
    "activations": """
        N = 1031

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = nn.LeakyReLU(0.1)
                self.elu = nn.ELU(alpha=0.7)

            def forward(self, x, y):
                a = F.gelu(x) + F.silu(y)
                b = F.mish(a) - F.hardswish(x)
                c = F.softplus(b, beta=2.0, threshold=3.0) * self.act(y)
                return self.elu(c) + torch.selu(a) + torch.sigmoid(x) * torch.tanh(y)

        def get_inputs():
            return [torch.randn(3, N), torch.randn(3, N)]

        def get_init_inputs():
            return []
        """,
    "fp16_chain": """
        N = 777

        class Model(nn.Module):
            def forward(self, x, y):
                z = F.gelu(x, approximate="tanh") * torch.sigmoid(y) + 0.1
                return torch.clamp(z, min=-0.5, max=2.0) / 3

        def get_inputs():
            return [torch.randn(4, N).half(), torch.randn(4, N).half()]

        def get_init_inputs():
            return []
        """,
    "broadcast": """
        B = 2
        C = 3
        H = 5
        W = 9
        SHAPES = {"odd": {"B": 3, "H": 7, "W": 11}}

        class Model(nn.Module):
            def __init__(self, channels, width):
                super().__init__()
                self.bias = nn.Parameter(torch.randn(channels, 1, 1))
                self.scale = nn.Parameter(torch.tensor(1.5))
                self.row = nn.Parameter(torch.randn(width))
                self.alpha = 0.25

            def forward(self, x):
                y = (x + self.bias) * self.scale + self.row
                y = y - self.alpha * x.transpose(2, 3).contiguous().transpose(2, 3)
                return torch.where(y > 0, y, y * 0.01)

        def get_inputs():
            return [torch.randn(B, C, H, W)]

        def get_init_inputs():
            return [C, W]
        """,
    "linear_relu_scale": """
        BATCH = 8
        IN_FEATURES = 48
        OUT_FEATURES = 40

        class Model(nn.Module):
            def __init__(self, in_features, out_features, scale):
                super().__init__()
                self.linear = nn.Linear(in_features, out_features)
                self.scale = scale

            def forward(self, x):
                return torch.relu(self.linear(x) + 0.5) * self.scale

        def get_inputs():
            return [torch.randn(BATCH, IN_FEATURES)]

        def get_init_inputs():
            return [IN_FEATURES, OUT_FEATURES, 0.5]
        """,
    "conv_bias_relu_scale": """
        B = 2
        H = 9
        SHAPES = {"tall": {"B": 1, "H": 13}}

        class Model(nn.Module):
            def __init__(self, channels):
                super().__init__()
                self.conv = nn.Conv2d(channels, 4, 3)
                self.bias = nn.Parameter(torch.randn(4, 1, 1))

            def forward(self, x):
                x = self.conv(x)
                return torch.relu(x + self.bias) * 0.5

        def get_inputs():
            return [torch.randn(B, 3, H, 7)]

        def get_init_inputs():
            return [3]
        """,
    "matmul_fp16": """
        M = 40
        K = 64
        N = 48
        SHAPES = {"odd": {"M": 33, "N": 20}}

        class Model(nn.Module):
            def __init__(self, k, n):
                super().__init__()
                self.weight = nn.Parameter(torch.randn(k, n, dtype=torch.float16) * 0.1)
                self.shift = nn.Parameter(torch.randn(n, dtype=torch.float16))

            def forward(self, a):
                y = torch.matmul(a, self.weight)
                return F.silu(y + self.shift) * 2.0

        def get_inputs():
            return [torch.randn(2, M, K, dtype=torch.float16)]

        def get_init_inputs():
            return [K, N]
        """,
    "inplace": """
        N = 300

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = nn.ReLU(inplace=True)

            def forward(self, x, y):
                x.mul_(2.0)
                z = x.relu_() + y
                z = self.act(z)
                F.leaky_relu(y, 0.2, inplace=True)
                return z + x - y

        def get_inputs():
            return [torch.randn(2, N), torch.randn(2, N)]

        def get_init_inputs():
            return []
        """,
    "softmax_scale": """
        R = 6
        N = 50

        class Model(nn.Module):
            def forward(self, x):
                return torch.softmax(x * 0.5, dim=-1) * 3.0 + 1.0

        def get_inputs():
            return [torch.randn(R, N)]

        def get_init_inputs():
            return []
        """,
}

DECLINED: dict[str, tuple[str, list[str]]] = {
    "lone_conv": ("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)

            def forward(self, x):
                return self.conv(x)

        def get_inputs():
            return [torch.randn(2, 3, 8, 8)]

        def get_init_inputs():
            return []
        """, ["conv2d alone", "nothing to fuse"]),
    "matmul_with_a_vector": ("""
        class Model(nn.Module):
            def forward(self, a, v):
                return torch.matmul(a, v)

        def get_inputs():
            return [torch.randn(16, 32), torch.randn(32)]

        def get_init_inputs():
            return []
        """, ["matmul alone", "Triton matmul template declines it", "1-D"]),
}


def write_problem(directory: Path, name: str, body: str) -> Path:
    path = directory / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(body).strip() + "\n")
    return path


@pytest.fixture(scope="module")
def problems(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("expert_problems")
    for name, body in PROBLEMS.items():
        write_problem(root, name, body)
    for name, (body, _) in DECLINED.items():
        write_problem(root, name, body)
    return root


def task_for(path: Path, stage: Stage = Stage.ALGORITHM_DESIGN, focus: Focus = Focus.STRUCTURE,
             parent: Draft | None = None, round_no: int = 1, backend: Backend = Backend.TRITON) -> AgentTask:
    return AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="",
                     stage=stage, focus=focus, backend=backend, parent=parent, round=round_no, agent_name="expert")


def evaluate(harness: Harness, problem: Path, draft: Draft, where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    candidate = where / "candidate.py"
    candidate.write_text(draft.source)
    shapes = "all" if len(inspect_problem(problem).shape_sets) > 1 else None
    verdict = harness.evaluate(problem, candidate, EvalOptions(device="cpu", timeout_s=120, shapes=shapes), where)
    assert verdict.accepted, f"{draft.structure}: {verdict.stage_failed}: {verdict.reasons}"
    assert verdict.kernels_launched


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_designer_drafts_are_accepted(name: str, problems: Path, harness: Harness, tmp_path: Path) -> None:
    path = problems / f"{name}.py"
    designer = ExpertDesigner(device="cpu")
    drafts = designer.propose(task_for(path))
    assert drafts, designer.last_errors
    packs = load_packs()
    for i, draft in enumerate(drafts):
        assert "\n" not in draft.structure and draft.structure
        assert draft.principle_ids and all(packs.find(pid) for pid in draft.principle_ids)
        assert CPU_NOTE in draft.notes
        config = read_config(draft.source)
        assert config is not None and config.device == "cpu" and config.kernels
        evaluate(harness, path, draft, tmp_path / f"draft{i}")
    variants = [read_config(d.source).variant for d in drafts]  # type: ignore[union-attr]
    if name == "linear_relu_scale":  # fp32: 3xTF32 first, the exact ieee kernel as its fallback
        assert variants == ["fused", "triton-matmul-3xtf32", "triton-matmul-ieee"], variants
    if name == "matmul_fp16":  # 16-bit: one Triton matmul, precision does not apply
        assert variants == ["fused", "triton-matmul"], variants


def test_library_ops_stay_torch_calls(problems: Path) -> None:
    program = analyse(problems / "conv_bias_relu_scale.py")
    fused = program.variant("fused")
    assert [g.template.name for g in fused.groups] == ["elementwise"]
    assert fused.kept == ["conv2d (cuDNN)"]
    source = ExpertDesigner(device="cpu").propose(task_for(problems / "conv_bias_relu_scale.py"))[0].source
    assert "self.conv(x)" in source and "def _fused_add_relu_mul_kernel(" in source
    assert "def get_inputs" not in source and "def get_init_inputs" not in source


def test_inplace_reference_is_computed_out_of_place(problems: Path) -> None:
    program = analyse(problems / "inplace.py")
    (group,) = program.variants[0].groups
    assert {n.op for n in group.spec.nodes} >= {"mul", "relu", "add", "leaky_relu", "sub"}


@pytest.mark.parametrize("name", list(DECLINED))
def test_nothing_to_fuse_is_declined_with_a_reason(name: str, problems: Path) -> None:
    designer = ExpertDesigner(device="cpu")
    assert designer.propose(task_for(problems / f"{name}.py")) == []
    assert len(designer.last_errors) == 1
    assert all(phrase in designer.last_errors[0] for phrase in DECLINED[name][1]), designer.last_errors


def test_designer_is_exhausted_after_round_one_and_declines_cuda(problems: Path) -> None:
    path = problems / "relu_chain.py"
    with pytest.raises(AgentExhausted):
        ExpertDesigner(device="cpu").propose(task_for(path, round_no=2))
    designer = ExpertDesigner(device="cpu")
    assert designer.propose(task_for(path, backend=Backend.CUDA)) == []
    assert "Triton" in designer.last_errors[0]


@pytest.mark.parametrize("name,focus", [("broadcast", Focus.PARALLEL_MAPPING), ("broadcast", Focus.TILING),
                                        ("broadcast", Focus.MEMORY), ("matmul_fp16", Focus.TILING)])
def test_tuner_rerenders_an_accepted_different_config(name: str, focus: Focus, problems: Path, harness: Harness,
                                                     tmp_path: Path) -> None:
    path = problems / f"{name}.py"
    parents = ExpertDesigner(device="cpu").propose(task_for(path))
    parent = parents[-1].model_copy(update={"id": "s1r1-expert-designer-0"})
    tuner = ExpertTuner(focus, device="cpu")
    drafts = tuner.propose(task_for(path, Stage.HARDWARE_TUNING, focus, parent=parent))
    assert len(drafts) == 1, tuner.last_errors  # CPU: exactly one, heuristic
    (draft,) = drafts
    assert CPU_NOTE in draft.notes and draft.parent_id == parent.id and draft.focus is focus
    old, new = read_config(parent.source), read_config(draft.source)
    assert old is not None and new is not None and old.variant == new.variant
    assert old.by_launcher() != new.by_launcher()
    assert all(load_packs().find(pid) for pid in draft.principle_ids)
    evaluate(harness, path, draft, tmp_path)
    # round 2 refines the child: the tuner must not walk back to the parent's config
    child = draft.model_copy(update={"id": "s2r1-child"})
    again = tuner.propose(task_for(path, Stage.HARDWARE_TUNING, focus, parent=child, round_no=2))
    assert all(d.source.split(CONFIG_TAG)[1].split("\n", 1)[1] != parent.source.split(CONFIG_TAG)[1].split("\n", 1)[1]
               for d in again)


def test_tuner_refuses_a_parent_it_did_not_write(problems: Path, fixtures_dir: Path) -> None:
    path = problems / "relu_chain.py"
    foreign = Draft(agent="llm", stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, structure="llm",
                    source=(fixtures_dir / "candidates" / "add_relu_triton.py").read_text(), id="s1r1-llm-0")
    tuner = ExpertTuner(Focus.TILING, device="cpu")
    assert tuner.propose(task_for(path, Stage.HARDWARE_TUNING, Focus.TILING, parent=foreign)) == []
    assert "not generated by the expert" in tuner.last_errors[0]
    assert read_config(CONFIG_TAG + "{not json") is None


def test_build_expert_agents_follows_the_run_config() -> None:
    designers, tuners = build_expert_agents(RunConfig(device="cpu"))
    assert [d.name for d in designers] == ["expert-designer"]
    assert {f: [a.name for a in agents] for f, agents in tuners.items()} == {
        Focus.PARALLEL_MAPPING: ["expert-mapping"], Focus.TILING: ["expert-tiling"], Focus.MEMORY: ["expert-memory"]}
    assert CONFIG_TAG.startswith("# ")
