"""Rotary position embeddings: recognised, folded into one node, computed by one Triton launch.

Tiny problems written here (fp32 and fp16, head_dim 16 / 10 / a partial 8 of 12, 3 query heads
and 1 key head, transposed views, negative positions, decode with one token) are judged by the
real harness on CPU (Triton interpreter). The shipped workload runs bf16 outside ``small``, whose
interpreter arithmetic is wrong, so it is checked at ``small`` only.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from expert_helpers import WORKLOADS
from torch import fx

from agents.expert.codegen import analyse, read_config, render
from agents.expert.kernels.rotary import RotaryTensor
from agents.expert.recognise_rotary import _expr, rotary_embedding
from egg.evaluate.harness import EvalOptions, Harness
from egg.problem import inspect_problem, load_problem_module

COMMON = '''
import torch
import torch.nn as nn


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Tables(nn.Module):
    def __init__(self, dim, max_position):
        super().__init__()
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, dim, 2).float() / dim))
        freqs = torch.outer(torch.arange(max_position).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)
'''

PROBLEMS: dict[str, str] = {
    # vLLM layout [B, S, H, D], fp32 without casts, unsqueeze(-2), operands in another order for k,
    # negative positions (torch wraps them), GQA 3/1 heads; a decode set with one token each
    "fp32_vllm_layout": '''
        B = 2
        S = 5
        D = 16
        P = 40
        SHAPES = {"decode": {"B": 4, "S": 1}}

        class Model(Tables):
            def forward(self, positions, q, k):
                cos = self.cos_cached[positions].unsqueeze(-2)
                sin = self.sin_cached[positions].unsqueeze(-2)
                return q * cos + rotate_half(q) * sin, (rotate_half(k) * sin) + (cos * k)

        def get_inputs():
            return [torch.randint(-P, P, (B, S)), torch.randn(B, S, 3, D), torch.randn(B, S, 1, D)]

        def get_init_inputs():
            return [D, P]
    ''',
    # the workload's form (upcast, fp32 math, one rounding) in fp16 with head_dim 10: halves of 5
    "fp16_upcast_head_dim_10": '''
        B = 2
        S = 3
        D = 10
        P = 16

        class Model(Tables):
            def forward(self, positions, q, k):
                cos = self.cos_cached[positions].unsqueeze(2)
                sin = self.sin_cached[positions].unsqueeze(2)
                qf, kf = q.float(), k.float()
                q_embed = (qf * cos) + (rotate_half(qf) * sin)
                k_embed = (kf * cos) + (rotate_half(kf) * sin)
                return q_embed.to(q.dtype), k_embed.to(k.dtype)

        def get_inputs():
            positions = torch.randint(0, P - S + 1, (B, 1)) + torch.arange(S)
            return [positions, torch.randn(B, S, 3, D).half(), torch.randn(B, S, 1, D).half()]

        def get_init_inputs():
            return [D, P]
    ''',
    # Hugging Face: transposed [B, H, S, D] views, cos/sin cast to fp16 (every op rounds to fp16)
    "fp16_hf_transposed": '''
        B = 2
        S = 4
        D = 16
        P = 32

        class Model(Tables):
            def forward(self, position_ids, q, k):
                q, k = q.transpose(1, 2), k.transpose(1, 2)
                cos = self.cos_cached[position_ids].to(q.dtype).unsqueeze(1)
                sin = self.sin_cached[position_ids].to(q.dtype).unsqueeze(1)
                return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)

        def get_inputs():
            return [torch.randint(0, P, (B, S)), torch.randn(B, S, 3, D).half(), torch.randn(B, S, 1, D).half()]

        def get_init_inputs():
            return [D, P]
    ''',
    # GPT-NeoX: only q is rotated, on the first 8 of its 12 dims (a strided view), flat tokens
    "neox_partial_q_only": '''
        T = 7
        D = 12
        ROT = 8
        P = 20

        class Model(Tables):
            def forward(self, positions, q, k):
                cos = self.cos_cached[positions].unsqueeze(1)
                sin = self.sin_cached[positions].unsqueeze(1)
                q_rot, q_pass = q[..., :8], q[..., 8:]
                q_rot = cos * q_rot + sin * rotate_half(q_rot)
                return torch.cat((q_rot, q_pass), dim=-1), k * 2.0

        def get_inputs():
            return [torch.randint(0, P, (T,)), torch.randn(T, 3, D), torch.randn(T, 1, D)]

        def get_init_inputs():
            return [ROT, P]
    ''',
}

# rotations that depend on each other: (forward, rotary launches); the graph order must survive
CHAINED: dict[str, tuple[str, int]] = {
    # RoPE of RoPE: the second reads the first's folded result
    "twice": ("""
            def forward(self, positions, q, k):
                cos = self.cos_cached[positions].unsqueeze(1)
                sin = self.sin_cached[positions].unsqueeze(1)
                q1 = q * cos + rotate_half(q) * sin
                return q1 * cos + rotate_half(q1) * sin
    """, 2),
    # k depends on rotated q: q and k cannot share a launch
    "k_reads_rotated_q": ("""
            def forward(self, positions, q, k):
                cos = self.cos_cached[positions].unsqueeze(1)
                sin = self.sin_cached[positions].unsqueeze(1)
                q1 = q * cos + rotate_half(q) * sin
                k = k + q1.sum(1, keepdim=True)
                return q1, k * cos + rotate_half(k) * sin
    """, 2),
}

# the forward of Model(Tables) on q [7, 3, 16]: not a rotation this expert folds
DECLINED: dict[str, str] = {
    "interleaved_gptj": '''
            def forward(self, positions, q):
                cos = self.cos_cached[positions].unsqueeze(1)
                sin = self.sin_cached[positions].unsqueeze(1)
                rot = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).flatten(-2)
                return q * cos + rot * sin
    ''',
    "literal_bounds": '''
            def forward(self, positions, q):
                cos = self.cos_cached[positions].unsqueeze(1)
                sin = self.sin_cached[positions].unsqueeze(1)
                return q * cos + torch.cat((-q[..., 8:], q[..., :8]), dim=-1) * sin
    ''',
    "rotated_half_read_elsewhere": '''
            def forward(self, positions, q):
                cos = self.cos_cached[positions].unsqueeze(1)
                sin = self.sin_cached[positions].unsqueeze(1)
                rot = rotate_half(q)
                return q * cos + rot * sin, rot
    ''',
    "cos_not_gathered": '''
            def forward(self, positions, q):
                cos = self.cos_cached[:7].unsqueeze(1)
                sin = self.sin_cached[:7].unsqueeze(1)
                return q * cos + rotate_half(q) * sin
    ''',
}


def write_problem(directory: Path, name: str, body: str) -> Path:
    path = directory / f"{name}.py"
    path.write_text(COMMON + textwrap.dedent(body))
    return path


def launches_per_forward(problem: Path, candidate: Path, shape_set: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """Triton grid launches of one ModelNew forward (the interpreter's one launch point)."""
    from triton.runtime import interpreter

    count = 0
    original = interpreter.GridExecutor.__call__

    def counted(executor: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal count
        count += 1
        return original(executor, *args, **kwargs)

    monkeypatch.setattr(interpreter.GridExecutor, "__call__", counted)
    module = load_problem_module(problem, inspect_problem(problem).shape_sets.get(shape_set, {}))
    spec = importlib.util.spec_from_file_location("rotary_candidate", candidate)
    assert spec is not None and spec.loader is not None
    cand = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cand)
    torch.manual_seed(0)
    model = cand.ModelNew(*module.get_init_inputs())
    with torch.no_grad():
        model(*module.get_inputs())
    return count


def check(harness: Harness, problem: Path, shape_set: str, shapes: str, where: Path,
          monkeypatch: pytest.MonkeyPatch) -> str:
    """The fused draft of ``problem`` traced at ``shape_set``: one rotary kernel, accepted on ``shapes``."""
    program = analyse(problem, shape_set)
    variant = program.variant("fused")
    assert [g.template.name for g in variant.groups if g.template.name != "elementwise"] == ["rotary"]
    source = render(program, variant, "cpu").source
    where.mkdir(parents=True, exist_ok=True)
    candidate = where / "candidate.py"
    candidate.write_text(source)
    verdict = harness.evaluate(problem, candidate, EvalOptions(device="cpu", timeout_s=300, shapes=shapes), where)
    assert verdict.accepted, f"{verdict.stage_failed}: {verdict.reasons}"
    assert any("rotary" in k for k in verdict.kernels_launched), verdict.kernels_launched
    launches = sum(1 for g in variant.groups)  # every group is one launch
    assert launches_per_forward(problem, candidate, shape_set, monkeypatch) == launches
    return source


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_rotary_problems_are_one_launch(name: str, harness: Harness, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_problem(tmp_path, name, PROBLEMS[name])
    shapes = "all" if name == "fp32_vllm_layout" else "default"  # default + decode (SEQ=1)
    source = check(harness, path, "default", shapes, tmp_path / "draft", monkeypatch)
    header = source.split("# ---- the reference")[0]
    assert "rotary embedding of" in header and "algorithm-structure/avoid-layout-copies" in header
    if name == "neox_partial_q_only":
        ops = [n.op for g in analyse(path).variant("fused").groups for n in g.spec.nodes]
        assert ops.count("rotary_embedding") == 1 and "mul" in ops  # k * 2.0 stays its own kernel


def test_workload_small_is_one_launch(harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = WORKLOADS / "rotary_embedding.py"
    program = analyse(path, "small")
    assert [(v.id, [g.template.name for g in v.groups]) for v in program.variants] == [("fused", ["rotary"])]
    source = check(harness, path, "small", "small", tmp_path / "small", monkeypatch)
    assert len(read_config(source).kernels) == 1  # type: ignore[union-attr]
    assert "def _fused_rotary_embedding_kernel(" in source and source.count("_kernel[grid](") == 1


def flat_problem(directory: Path, name: str, forward: str) -> Path:
    """Model(Tables) with ``forward`` on positions [7], q [7, 3, 16] and k [7, 1, 16]."""
    path = directory / f"{name}.py"
    path.write_text(COMMON + "\n\nclass Model(Tables):\n" + textwrap.indent(textwrap.dedent(forward), "    ")
                    + "\n\ndef get_inputs():\n    return [torch.randint(0, 20, (7,)), torch.randn(7, 3, 16)"
                    + (", torch.randn(7, 1, 16)]" if "q, k)" in forward else "]")
                    + "\n\n\ndef get_init_inputs():\n    return [16, 20]\n")
    return path


@pytest.mark.parametrize("name", list(CHAINED))
def test_chained_rotations_keep_the_graph_order(name: str, harness: Harness, tmp_path: Path) -> None:
    forward, launches = CHAINED[name]
    path = flat_problem(tmp_path, name, forward)
    program = analyse(path)
    groups = program.variant("fused").groups
    assert sum(g.template.name == "rotary" for g in groups) == launches
    (tmp_path / "draft").mkdir()
    candidate = tmp_path / "draft" / "candidate.py"
    candidate.write_text(render(program, program.variant("fused"), "cpu").source)
    verdict = harness.evaluate(path, candidate, EvalOptions(device="cpu", timeout_s=300, shapes="default"),
                               tmp_path / "draft")
    assert verdict.accepted, f"{verdict.stage_failed}: {verdict.reasons}"


@pytest.mark.parametrize("name", list(DECLINED))
def test_unsupported_variants_are_not_folded(name: str, tmp_path: Path) -> None:
    path = flat_problem(tmp_path, name, DECLINED[name])
    program = analyse(path)
    assert "rotary_embedding" not in program.tp.gm.code
    assert all(g.template.name != "rotary" for v in program.variants for g in v.groups)


def test_folded_value_and_unfused_expression_match_the_reference(tmp_path: Path) -> None:
    """The folded node's Python value and the expression an unfused variant writes back both
    reproduce the reference bit for bit (fp16, every op rounded)."""
    path = write_problem(tmp_path, "hf", PROBLEMS["fp16_hf_transposed"])
    program = analyse(path)
    module = load_problem_module(path, {})
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs())
    inputs = module.get_inputs()
    expected = model(*inputs)
    folded = fx.GraphModule(model, program.tp.gm.graph)(*inputs)  # real buffers; calls rotary_embedding
    (node,) = [n for n in program.tp.gm.graph.nodes if n.target is rotary_embedding]
    plan = [RotaryTensor.model_validate(t) for t in node.kwargs["plan"]["tensors"]]
    assert [t.cos_casts for t in plan] == [["float16"], ["float16"]] and plan[0].mul == "float16"
    position_ids, q, k = inputs
    names = ["position_ids", "model.cos_cached", "model.sin_cached", "q.transpose(1, 2)", "k.transpose(1, 2)"]
    written = eval(_expr(plan).format(*names), {"torch": torch},
                   {"position_ids": position_ids, "model": model, "q": q, "k": k})
    for e, f, w in zip(expected, folded, written):
        assert torch.equal(e, f) and torch.equal(e, w)
