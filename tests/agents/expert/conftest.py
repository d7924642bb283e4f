"""Fixtures shared by the expert-agent tests: one CPU harness (a warm worker) per test module.

The suite imports tests with ``--import-mode=importlib``, so this folder is put on ``sys.path``
here for the shared helpers module (``from expert_helpers import accepted, designs``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from egg.evaluate.harness import Harness

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    with Harness(device="cpu") as h:
        yield h
