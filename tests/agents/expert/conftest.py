"""Fixtures shared by the expert-agent tests: one CPU harness (a warm worker) per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from egg.evaluate.harness import Harness


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    with Harness(device="cpu") as h:
        yield h
