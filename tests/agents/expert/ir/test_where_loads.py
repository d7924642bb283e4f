"""Loads a ``where`` discards are predicated on whole 16-byte runs the condition keeps (causal and
padding masks), only where the condition is monotone index arithmetic; results never change."""

from __future__ import annotations

from pathlib import Path

import pytest
from expert_helpers import accepted, check, forced, problem

from agents.expert.ir.expr import Const, IndexValue, Op
from agents.expert.ir.index import Affine, Var
from agents.expert.ir.where_loads import monotone
from egg.evaluate.harness import Harness

I, J = Var("i", 64), Var("j", 64)


def _cmp(op: str, index: Affine, value: int) -> Op:
    return Op(op, (IndexValue(index, "int64"), Const(value, "int64")), "bool")


@pytest.mark.parametrize(("name", "expr", "expected"), [
    ("causal", _cmp("ge", Affine.of(J) - Affine.of(I), 1), True),
    ("negated", Op("logical_not", (_cmp("lt", Affine.of(J), 5),), "bool"), True),
    ("as_int_then_bool", Op("bitwise_and", (_cmp("ge", Affine.of(J), 3), Const(True, "bool")), "bool"), True),
    ("parity", _cmp("eq", Affine.of(J).mod(2), 0), False),
    ("band", Op("logical_and", (_cmp("ge", Affine.of(J) - Affine.of(I), -4), _cmp("le", Affine.of(J) - Affine.of(I), 0)),
                "bool"), False),
    ("equality", _cmp("eq", Affine.of(J), 7), False),
    ("nonzero_as_bool", Op("to", (Op("sub", (IndexValue(Affine.of(J)), Const(5, "int64")), "int64"),), "bool"), False),
])
def test_which_conditions_are_monotone_along_the_contiguous_index(name: str, expr: Op, expected: bool) -> None:
    assert monotone(expr, J) is expected
    assert monotone(expr, Var("unused", 8))  # constant along an index it does not read


HALF = "[torch.randn(3, 40, 40, dtype=torch.float16)]"
MASKS = {
    "causal_softmax": ("m = torch.triu(torch.ones(40, 40, dtype=torch.bool), 1)\n"
                       "return torch.softmax((x * 0.5).masked_fill(m, float('-inf')), -1)", True),
    "padding_keep_left": ("cols = torch.arange(40)\nreturn torch.where(cols < 17, x, 0.0) * 2", True),
    # kept from mid-run on: a run is fetched when its last element is kept, not only its first
    "padding_keep_right": ("cols = torch.arange(40)\nreturn torch.where(cols >= 19, x, 0.0) * 2", True),
    "band": ("r = torch.arange(40)\nm = (r[None, :] - r[:, None]).abs() > 3\nreturn x.masked_fill(m, 0.0) + 1", False),
    "data_dependent": ("return torch.where(x > 0, x, x * 0.1)", False),
}


@pytest.mark.parametrize("name", sorted(MASKS))
def test_masked_reads_are_predicated_only_where_exact(name: str, harness: Harness, tmp_path: Path) -> None:
    body, predicated = MASKS[name]
    path = problem(tmp_path, name, body, HALF)
    cands = check(harness, path, tmp_path)
    assert ("// 8" in cands[0].source) is predicated  # fp16: runs of 8 elements (16 bytes)


def test_the_looped_causal_softmax_is_predicated_and_exact(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "causal", MASKS["causal_softmax"][0], HALF)
    c = forced(path, PERSISTENT=False, RBLOCK=8, XBLOCK=4)
    assert "for roffset" in c.source and "// 8" in c.source
    accepted(harness, path, c.source, "default", tmp_path / "looped")
