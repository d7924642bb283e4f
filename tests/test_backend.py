"""``torch.compile(model, backend="egg")``: each Dynamo graph optimised through the real pipeline.

The graphs are optimised by the offline expert agents and judged by the harness on the CPU
(Triton interpreter), so the modules here are small ones the expert handles.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from structlog.testing import capture_logs
from torch import nn

import egg.backend  # noqa: F401 - registers "egg" with TorchDynamo
from egg.backend import egg_backend

BUDGET = "candidates=2,rounds=1,stage2_rounds=1,top_k=1"


class RMSNorm(nn.Module):
    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def options(tmp_path: Path) -> dict[str, Any]:
    return {"device": "cpu", "cache_dir": str(tmp_path / "cache"), "budget": BUDGET}


def _events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


def _run(model: nn.Module, *args: Any, backend: Any = "egg", options: dict[str, Any] | None = None) -> tuple[Any, list]:
    compiled = torch.compile(model, backend=backend, options=options) if options else torch.compile(model, backend=backend)
    with capture_logs() as logs:
        out = compiled(*args)
    return out, logs


@pytest.mark.slow
def test_a_module_is_optimised_and_reused_from_the_cache(options: dict[str, Any], tmp_path: Path) -> None:
    model, x = RMSNorm(), torch.randn(6, 64)
    with torch.no_grad():
        out, logs = _run(model, x, options=options)
        torch.testing.assert_close(out, model(x))
        (done,) = _events(logs, "backend.optimised")
        run_dir = Path(done["run_dir"])
        assert (run_dir / "best.py").is_file()
        assert "rms_norm" in (run_dir / "report.json").read_text()  # the analysis saw the pattern
        # "another process": Dynamo forgets, the disk cache answers
        torch._dynamo.reset()
        again, logs = _run(model, x, options=options)
    torch.testing.assert_close(again, model(x))
    assert _events(logs, "backend.cache_hit") and not _events(logs, "backend.optimising")
    assert len(list((tmp_path / "cache" / "graphs").iterdir())) == 1


@pytest.mark.slow
def test_the_optimised_graph_reads_the_live_weights(options: dict[str, Any]) -> None:
    model, x = RMSNorm(), torch.randn(6, 64)
    compiled = torch.compile(model, backend=egg_backend(**options))
    with torch.no_grad():
        compiled(x)
        model.weight.mul_(3.0)  # parameters are graph inputs: a later update is seen
        torch.testing.assert_close(compiled(x), model(x))


def test_graphs_that_need_autograd_run_as_captured(options: dict[str, Any], tmp_path: Path) -> None:
    model, x = RMSNorm(), torch.randn(6, 64)
    out, logs = _run(model, x, options=options)  # grad mode on, weight requires grad
    torch.testing.assert_close(out, model(x))
    (kept,) = _events(logs, "backend.graph_kept")
    assert "needs autograd" in kept["reason"]
    assert kept["log_level"] == "warning"
    assert not (tmp_path / "cache").exists()


class Broken(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x + 1.0)
        torch._dynamo.graph_break()
        return torch.sigmoid(y) * 2.0


@pytest.mark.slow
def test_each_graph_of_a_graph_break_is_optimised(options: dict[str, Any]) -> None:
    model, x = Broken(), torch.randn(4, 32)
    with torch.no_grad():
        out, logs = _run(model, x, options=options)
    torch.testing.assert_close(out, model(x))
    assert len(_events(logs, "backend.optimised")) == 2


class Reshape(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(4, 2, 8).transpose(1, 2)


def test_a_graph_with_nothing_to_compute_stays_as_captured(options: dict[str, Any]) -> None:
    with torch.no_grad():
        out, logs = _run(Reshape(), torch.randn(4, 16), options=options)
    assert out.shape == (4, 8, 2)
    (kept,) = _events(logs, "backend.graph_kept")
    assert "nothing to optimise" in kept["reason"]


def test_batch_norm_statistics_updates_stay_in_torch(options: dict[str, Any]) -> None:
    model, x = nn.BatchNorm1d(4), torch.randn(8, 4)
    reference = nn.BatchNorm1d(4)
    with torch.no_grad():
        out, logs = _run(model, x, options=options)
        torch.testing.assert_close(out, reference(x))
    torch.testing.assert_close(model.running_mean, reference.running_mean)
    (kept,) = _events(logs, "backend.graph_kept")
    assert "in place" in kept["reason"]


@pytest.mark.slow
def test_a_new_input_signature_is_optimised_for_itself(options: dict[str, Any]) -> None:
    model = RMSNorm()
    compiled = torch.compile(model, backend="egg", options=options)
    with torch.no_grad(), capture_logs() as logs:
        for rows in (6, 3):
            x = torch.randn(rows, 64)
            torch.testing.assert_close(compiled(x), model(x))
    assert len(_events(logs, "backend.optimised")) == 2


def test_unknown_options_are_refused() -> None:
    with pytest.raises(Exception, match="budgett"):
        egg_backend(budgett="candidates=1")

