"""A real run directory (CPU, scripted chat model) shared by the report tests, and a GPU-like copy.

The scripted answers carry hostile text (a ``<script>`` in a structure, markup in reasons) so every
test that renders the report also checks the escaping.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from egg.config import Budget, RunConfig
from egg.run import run_optimization

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
GOOD = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()
GOOD_256 = GOOD.replace("triton.cdiv(n, 1024)", "triton.cdiv(n, 256)").replace("BLOCK=1024", "BLOCK=256")
WRONG = (FIXTURES / "candidates" / "harness" / "wrong_values.py").read_text()
CHEAT = (FIXTURES / "candidates" / "cheats" / "try_fallback.py").read_text()
HOSTILE = "fused <script>window.pwned=1</script> & friends"


def _answer(code: str, structure: str) -> AIMessage:
    return AIMessage(content=f"STRUCTURE: {structure}\n```python\n{code}\n```\n")


@pytest.fixture(scope="session")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One designer round then one tuning round: 1 accepted + 3 tuned (accepted, wrong, cheat)."""
    model = GenericFakeChatModel(messages=iter([
        _answer(GOOD, HOSTILE),
        _answer(GOOD_256, "256 per program"),
        _answer(WRONG, "tiling that lost the relu </td></tr>"),
        _answer(CHEAT, "fallback to torch"),
    ]))
    config = RunConfig(llm="scripted", device="cpu", expert_seeds=False, trials=2, timing_runs=3,
                       budget=Budget(designers=1, stage1_rounds=1, stage2_rounds=1, top_k=1))
    run_dir = tmp_path_factory.mktemp("report") / "add_relu-run"
    run_optimization(PROBLEM, config, run_dir, chat_model=model)
    return run_dir


def make_gpu_like(src: Path, dst: Path) -> Path:
    """A copy of a CPU run dir whose report.json claims comparable (GPU) timings, for rendering tests."""
    shutil.copytree(src, dst)
    data = json.loads((dst / "report.json").read_text())
    data.update(device="cuda", timing_comparable=True, notes=[], run_dir=str(dst))
    times = iter([0.0061, 0.0049, 0.0072, 0.0052, 0.0058, 0.0066])
    for c in data["candidates"]:
        c["timing_comparable"] = True
        if c["accepted"]:
            ms = next(times)
            c.update(candidate_ms=ms, eager_ms=0.011, compile_ms=0.0078,
                     speedup_vs_eager=0.011 / ms, speedup_vs_compile=0.0078 / ms)
    best = min((c for c in data["candidates"] if c["accepted"]), key=lambda c: c["candidate_ms"])
    data.update(best=best, speedup_vs_eager=best["speedup_vs_eager"], speedup_vs_compile=best["speedup_vs_compile"],
                outcome=f"best candidate {best['id']}: {best['structure']}")
    data["analysis"]["roofline_ms"] = 0.0021
    data["baseline"].update(eager_ms=0.011, compile_ms=0.0078, device="cuda", timing_comparable=True)
    (dst / "report.json").write_text(json.dumps(data, indent=2))
    return dst


@pytest.fixture(scope="session")
def gpu_like_run(real_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_gpu_like(real_run, tmp_path_factory.mktemp("gpu") / "gpu-run")


@pytest.fixture
def suite_dir(real_run: Path, tmp_path: Path) -> Path:
    """A KernelBench optimize-mode suite dir (suite.json as kernelbench_adapter writes it)."""
    out = tmp_path / "kb-suite"
    problem_dir = out / "level1" / "1_AddRelu"
    shutil.copytree(real_run, problem_dir)
    (problem_dir / "report.html").unlink(missing_ok=True)

    def result(pid: int, name: str, correct: bool, eager: float | None, comp: float | None, artifact: str | None,
               stage: str | None = None, reason: str = "") -> dict:
        return {"level": 1, "problem_id": pid, "problem_name": name, "sample_id": 0,
                "compiled": correct or stage == "correctness", "correctness": correct, "stage_failed": stage,
                "reasons": [reason] if reason else [],
                "candidate_ms": 0.01 if correct else None, "speedup_vs_eager": eager, "speedup_vs_compile": comp,
                "timing_comparable": True, "device": "cuda", "artifact": artifact}

    results = [
        result(1, "1_AddRelu.py", True, 2.5, 1.4, str(problem_dir)),
        result(2, "2_Softmax<i>.py", True, 0.6, 0.45, None),
        result(3, "3_Matmul.py", False, None, None, None, "correctness", "output mismatch <b>bold</b>"),
        result(4, "4_LayerNorm.py", True, 1.2, None, None),
    ]
    suite = {
        "egg_version": "0.1.0", "mode": "optimize", "level": 1, "root": "/kb", "out_dir": str(out),
        "created": "2026-01-01T00:00:00+00:00", "updated": "2026-01-01T01:00:00+00:00",
        "selected": [1, 2, 3, 4, 5], "pending": [5], "metrics_sample_id": 0,
        "metrics": {
            "total": 4, "compiled": 4, "correct": 3, "compilation_rate": 1.0, "correctness_rate": 0.75,
            "timing_comparable": True,
            "vs_eager": {"baseline": "eager", "fast_p": {"0.0": 0.75, "0.5": 0.75, "0.8": 0.5, "1.0": 0.5,
                                                         "1.5": 0.25, "2.0": 0.25},
                         "geo_mean_speedup": 1.2164, "timed_correct": 3, "untimed_correct": 0},
            "vs_compile": {"baseline": "compile", "fast_p": {"0.0": 0.5, "0.5": 0.25, "0.8": 0.25, "1.0": 0.25,
                                                             "1.5": 0.0, "2.0": 0.0},
                           "geo_mean_speedup": 0.7937, "timed_correct": 2, "untimed_correct": 1},
        },
        "results": results,
    }
    (out / "suite.json").write_text(json.dumps(suite, indent=2))
    (out / "results.json").write_text(json.dumps({str(r["problem_id"]): [r] for r in results}, indent=2))
    return out
