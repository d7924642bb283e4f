"""egg.optimize: a problem file, a live module with its own weights, and the lazy torch.compile-like form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from torch import nn

import egg
from egg.errors import EggInputError

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()

BIAS_RELU_NEW = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bias_relu_kernel(x_ptr, b_ptr, out_ptr, n_elements, n_cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs % n_cols, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(33))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _bias_relu_kernel[(triton.cdiv(n, 256),)](x, self.bias, out, n, x.shape[-1], BLOCK=256)
        return out
'''

# The same kernel for the graph problem egg.optimize(module) writes: the bias is an input.
BIAS_RELU_GRAPH = BIAS_RELU_NEW.replace(
    """    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(33))

    def forward(self, x):""",
    """    def __init__(self):
        super().__init__()

    def forward(self, bias, x):""",
).replace("self.bias", "bias")


class BiasRelu(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.bias)


def scripted(*codes: str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(AIMessage(content=f"```python\n{c}\n```") for c in codes))


BUDGET = {"designers": 1, "stage1_rounds": 1, "stage2_rounds": 0, "top_k": 1}


def test_optimize_a_problem_file_returns_a_module_that_reproduces_the_reference(tmp_path):
    result = egg.optimize(FIXTURES / "problems" / "add_relu.py", llm=scripted(GOOD), budget=BUDGET,
                          device="cpu", out=tmp_path / "run")
    assert result.source == (result.run_dir / "best.py").read_text()
    x, y = torch.randn(37, 129), torch.randn(37, 129)
    torch.testing.assert_close(result.module(x, y), torch.relu(x + y))
    assert result.report.best is not None


def test_load_result_keeps_the_reference_when_the_best_candidate_is_slower_than_eager(tmp_path):
    done = egg.optimize(FIXTURES / "problems" / "add_relu.py", llm=scripted(GOOD), budget=BUDGET,
                        device="cpu", out=tmp_path / "run")
    again = egg.load_result(done.run_dir, device="cpu")  # a CPU run: its candidate, timings not compared
    assert again.kept_reference is None and again.source == done.source
    assert type(again.module).__name__ == "ModelNew"
    assert not any("slower" in n or "returns the reference" in n for n in done.report.notes)
    # the same run as a GPU run whose only accepted candidate ran at 0.45x of eager
    report = json.loads((done.run_dir / "report.json").read_text())
    report.update(device="cuda", timing_comparable=True)
    report["best"].update(timing_comparable=True, speedup_vs_eager=0.45, speedup_vs_compile=0.3)
    (done.run_dir / "report.json").write_text(json.dumps(report))
    slow = egg.load_result(done.run_dir, device="cpu")
    assert type(slow.module).__name__ == "Model" and slow.source is None and slow.speedup_vs_eager is None
    assert "0.45x of eager PyTorch" in slow.kept_reference and "best.py is kept" in slow.kept_reference
    x, y = torch.randn(5, 7), torch.randn(5, 7)
    torch.testing.assert_close(slow.module(x, y), torch.relu(x + y))
    with pytest.raises(EggInputError, match="no report.json"):
        egg.load_result(tmp_path / "nowhere")


def test_live_module_runs_on_its_own_weights_and_sees_updates(tmp_path):
    live = BiasRelu(33)
    with torch.no_grad():
        live.bias.copy_(torch.linspace(-1, 1, 33))  # "trained": no seed reproduces these
    x = torch.randn(5, 33)
    result = egg.optimize(live, [x], llm=scripted(BIAS_RELU_NEW), budget=BUDGET, device="cpu", out=tmp_path / "run")
    assert result.report.best is not None, result.report.rejected
    torch.testing.assert_close(result.module(x), live(x))
    with torch.no_grad():
        live.bias.add_(0.5)  # a later update to the live weights is seen
    torch.testing.assert_close(result.module(x), live(x))
    # every parameter of the optimized module *is* a parameter of the live module
    assert {id(p) for p in result.module.parameters()} == {id(p) for p in live.parameters()}


def test_lazy_optimize_caches_on_disk_by_signature(tmp_path, monkeypatch):
    # egg.optimize(module) is torch.compile(module, backend="egg"): Dynamo lifts the bias to a
    # graph input, so the graph problem's forward takes (bias, x) and its ModelNew has no weights.
    monkeypatch.setenv("EGG_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    live = BiasRelu(33)
    lazy = egg.optimize(live, llm=scripted(BIAS_RELU_GRAPH), budget=BUDGET, device="cpu")
    x = torch.randn(5, 33)
    with torch.no_grad():  # EGG optimizes inference graphs
        torch.testing.assert_close(lazy(x), live(x))
    runs = list((tmp_path / "cache" / "graphs").iterdir())
    assert len(runs) == 1
    # a "second process": Dynamo starts afresh, the model has nothing to say; the cache answers
    torch._dynamo.reset()
    again = egg.optimize(live, llm=scripted(), budget=BUDGET, device="cpu")
    with torch.no_grad():
        torch.testing.assert_close(again(x), live(x))
        assert list((tmp_path / "cache" / "graphs").iterdir()) == runs
        # a new input signature optimizes again (the scripted model has no answer left; the
        # expert's candidate or the graph itself is the result, still correct)
        x2 = torch.randn(7, 33)
        torch.testing.assert_close(again(x2), live(x2))
    assert len(list((tmp_path / "cache" / "graphs").iterdir())) == 2
    torch._dynamo.reset()


def test_the_report_says_when_the_reference_is_returned():
    from egg.report.model import build_report

    def state(speedup: float, comparable: bool = True) -> dict:
        record = {"id": "s1r1-a", "stage": "algorithm_design", "round": 1, "agent": "a", "focus": "structure",
                  "structure": "x", "source_sha256": "0", "accepted": True, "candidate_ms": 1.0,
                  "speedup_vs_eager": speedup, "timing_comparable": comparable}
        return {"candidates": [record], "best_id": "s1r1-a", "problem_path": "p.py"}

    def notes(speedup: float, comparable: bool = True) -> list[str]:
        return build_report(state(speedup, comparable), run_dir="r", device="cuda" if comparable else "cpu",
                            config={}, packs=[], llm_usage={}, evaluations=1).notes

    assert any("0.80x of eager PyTorch" in n for n in notes(0.8))
    assert not any("eager PyTorch" in n for n in notes(1.3))
    assert not any("eager PyTorch" in n for n in notes(0.8, comparable=False))  # CPU: interpreter timings
