"""The launchers' plain-Python helpers agree with the torch/Triton functions they replace."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
import torch
import triton

from agents.expert.kernels.host_helpers import HOST_HELPERS


def helpers() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    for source in HOST_HELPERS.values():
        exec(compile(source, "<host_helpers>", "exec"), namespace)  # plain Python, no @jit inside
    return namespace


def test_cdiv_and_next_pow2_match_triton() -> None:
    h = helpers()
    for a, b in itertools.product(range(0, 70), range(1, 20)):
        assert h["_egg_cdiv"](a, b) == triton.cdiv(a, b)
    for n in [*range(0, 300), 1 << 20, (1 << 20) + 1, 393216]:
        assert h["_egg_next_pow2"](n) == triton.next_power_of_2(n), n


def test_broadcast_shapes_matches_torch_on_random_shapes() -> None:
    h = helpers()
    rng = random.Random(0)
    seen = {"broadcast": 0, "error": 0}
    for _ in range(2000):
        rank = rng.randint(0, 5)
        full = [rng.choice([0, 1, 2, 3, 7]) for _ in range(rank)]
        shapes = []
        for _ in range(rng.randint(1, 4)):
            keep = rng.randint(0, rank)  # a suffix of the full shape, some dims set to 1 or changed
            s = [d if rng.random() < 0.6 else rng.choice([1, 1, 5]) for d in full[rank - keep:]]
            shapes.append(torch.Size(s) if rng.random() < 0.5 else tuple(s))
        try:
            expected: Any = tuple(torch.broadcast_shapes(*shapes))
        except RuntimeError:
            expected = RuntimeError
        if expected is RuntimeError:
            seen["error"] += 1
            with pytest.raises(RuntimeError):
                h["_egg_broadcast_shapes"](*shapes)
        else:
            seen["broadcast"] += 1
            assert h["_egg_broadcast_shapes"](*shapes) == expected, shapes
    assert min(seen.values()) > 200, seen  # both outcomes were exercised
