"""Test configuration shared by the whole suite.

``TRITON_INTERPRET=1`` must be set before any ``@triton.jit`` decorator runs, so it is set here,
at import time of the first conftest, when no CUDA device is present. GPU tests carry
``@pytest.mark.gpu`` and are skipped on machines without CUDA.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# helpers any test may import (pack_helpers): the suite imports tests with --import-mode=importlib
sys.path.append(str(Path(__file__).parent))

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover - torch is a hard dependency
    HAS_CUDA = False

if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Runs write what they learn to the transition memory under the cache directory: tests get a cache
# of their own, so they never read a developer's experience (it would change what agents propose)
# nor write into it. Worker processes inherit it.
os.environ["EGG_CACHE_DIR"] = tempfile.mkdtemp(prefix="egg-test-cache-")
atexit.register(shutil.rmtree, os.environ["EGG_CACHE_DIR"], ignore_errors=True)

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HAS_CUDA:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        # the marker, not ``item.keywords``: keywords hold parameter ids too, and a case named "gpu"
        # (tests/evaluate/test_devices.py) is not a GPU test
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def _gpu_load_runs_alone(request: pytest.FixtureRequest) -> Any:
    """GPU tests that load the machine on purpose (``gpu_load``: a GPU co-tenant, every core busy)
    run while no other GPU test does, under xdist too: their load reaches the other workers'
    judges (2026-12-03: an honest candidate failed the judge's clock in the worker beside the
    co-tenant test). Other GPU tests share the lock: the judges' own reader-writer lock
    (:class:`egg.evaluate.gpu_lock.GpuLock`, whose gate keeps a waiting ``gpu_load`` test from being
    starved by shared holders that keep overlapping), on a file of the test suite's."""
    if not HAS_CUDA or "gpu" not in request.keywords:
        yield
        return
    from egg.evaluate.gpu_lock import GpuLock

    lock = GpuLock(Path(tempfile.gettempdir()) / f"egg-gpu-tests-{os.getuid()}.lock")
    try:
        with lock.exclusive() if "gpu_load" in request.keywords else lock.shared():
            yield
    finally:
        lock.close()


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


# ---------------------------------------------------------------- small problem files

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
    """``write_problem("x, y: return x + y", inputs="[...]")``: a problem file in tmp_path (forward's
    arguments, a colon, then its body)."""

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


@pytest.fixture(autouse=True)
def _structlog_defaults() -> Any:
    """Each test starts with structlog unconfigured: ``egg.optimize`` configures the API's
    warning level on first use, and a later test's ``capture_logs`` would then see no info events."""
    import structlog

    import egg.logging

    yield
    structlog.reset_defaults()
    egg.logging._configured = False  # noqa: SLF001 - test isolation
