"""egg.optimize: a problem file, a live module with its own weights, and the lazy torch.compile-like form."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


@pytest.fixture
def openai_stub():
    """The local OpenAI-protocol server of tests/agents/llm (imported here, not at the top: a live
    module's problem file copies this file's top-level imports)."""
    sys.path.insert(0, str(Path(__file__).parent / "agents" / "llm"))
    import llm_stub

    with llm_stub.serving() as stub:
        yield stub


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


# A problem whose Model takes its size as a constructor argument, from a shape constant.
SIZED_PROBLEM = '''
import torch
import torch.nn as nn

N = 257
SHAPES = {"small": {"N": 33}}


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return torch.relu(x + self.bias)


def get_inputs():
    return [torch.randn(4, N)]


def get_init_inputs():
    return [N]
'''
SIZED_NEW = BIAS_RELU_NEW.replace("def __init__(self):", "def __init__(self, n):").replace(
    "torch.zeros(33)", "torch.randn(n)")


def test_the_returned_module_is_built_at_the_shape_set_it_was_checked_at(tmp_path):
    problem = tmp_path / "sized.py"
    problem.write_text(SIZED_PROBLEM)
    result = egg.optimize(problem, llm=scripted(SIZED_NEW), budget=BUDGET, device="cpu", out=tmp_path / "run",
                          shapes="small")
    assert result.report.best is not None, result.report.rejected
    assert result.shape_set == "small" and result.module.bias.shape == (33,)
    # the same seed as the harness: the parameters are the reference's, at the small size
    torch.manual_seed(result.report.config["seed"])
    reference = egg.api._reference(problem, torch.device("cpu"), result.report.config["seed"], {"N": 33})
    x = torch.randn(4, 33)
    torch.testing.assert_close(result.module(x), reference(x))
    again = egg.load_result(result.run_dir, device="cpu")
    assert again.shape_set == "small" and again.module.bias.shape == (33,)


def test_a_user_chat_model_is_named_by_its_model_and_runs_under_our_retries(tmp_path, openai_stub):
    from langchain_openai import ChatOpenAI

    user_model = ChatOpenAI(model="tiny-model", base_url=openai_stub.base_url, api_key="k", max_retries=5)
    openai_stub.set_script({"status": 503}, {"content": f"```python\n{GOOD}\n```\nSTRUCTURE: fused"})
    result = egg.optimize(FIXTURES / "problems" / "add_relu.py", llm=user_model, budget=BUDGET, device="cpu",
                          out=tmp_path / "run", shapes="small", llm_options={"max_retries": 1})
    assert any(c.accepted and c.agent == "llm-designer-1" for c in result.report.candidates)
    report = result.report
    assert report.config["llm"] == report.llm_usage["model"] == "python:ChatOpenAI:tiny-model"
    # one 503, then the answer: two requests in all (its own five retries are off), both counted
    assert len(openai_stub.requests) == 2
    assert (report.llm_usage["calls"], report.llm_usage["failed_calls"], report.llm_usage["successful_calls"]) == (2, 1, 1)
    assert openai_stub.model_requests == 1  # the preflight, through the model's own client
    assert any("max_retries=0" in n for n in report.notes)
    assert user_model.max_retries == 5  # the user's object is left as it was


def test_the_api_on_cpu_needs_no_triton_interpret_and_logs_only_warnings(tmp_path):
    # a fresh process, as a user's script would be: no TRITON_INTERPRET, no logging configured
    answer = "```python\n" + GOOD + "\n```"
    script = f"""
import torch, egg
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
model = GenericFakeChatModel(messages=iter([AIMessage(content={answer!r})]))
result = egg.optimize({str(FIXTURES / "problems" / "add_relu.py")!r}, llm=model, device="cpu",
                      out={str(tmp_path / "run")!r}, budget={BUDGET!r}, shapes="small")
x, y = torch.randn(5, 33), torch.randn(5, 33)
torch.testing.assert_close(result.module(x, y), torch.relu(x + y))
print("module ran:", type(result.module).__name__)
"""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "EGG_LOG_LEVEL")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "module ran: ModelNew" in done.stdout
    assert "[debug" not in done.stderr and "[info" not in done.stderr
    assert "TRITON_INTERPRET" not in os.environ or os.environ["TRITON_INTERPRET"] == "1"
