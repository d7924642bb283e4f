"""Test configuration shared by the whole suite.

``TRITON_INTERPRET=1`` must be set before any ``@triton.jit`` decorator runs, so it is set here,
at import time of the first conftest, when no CUDA device is present. GPU tests carry
``@pytest.mark.gpu`` and are skipped on machines without CUDA.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

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
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
