"""The launch path's render-time check (agents/expert/templates/launch.py): a direct call is kept
only where its positional form matches the rendered kernel's signature."""

from __future__ import annotations

from agents.expert.templates import Launch
from agents.expert.templates.launch import check_direct_calls, grid3

SOURCE = '''
@triton.jit
def k(x_ptr, out_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    pass
'''


def test_matching_calls_stay_direct() -> None:
    call = Launch("k", "(4,)", ["x", "out"], ["XBLOCK=8", "RBLOCK=16", "num_warps=4"])
    assert check_direct_calls(SOURCE, [call]) == [] and call.direct
    assert call.positional == ["x", "out", "8", "16"] and call.grid3 == "(4, 1, 1)"


def test_constexprs_listed_in_another_order_turn_the_call_plain() -> None:
    swapped = Launch("k", "(4,)", ["x", "out"], ["RBLOCK=16", "XBLOCK=8", "num_warps=4"])
    short = Launch("k", "(4,)", ["x"], ["XBLOCK=8", "RBLOCK=16"])
    unknown = Launch("other", "(4,)", ["x", "out"], ["XBLOCK=8", "RBLOCK=16"])
    assert check_direct_calls(SOURCE, [swapped, short, unknown]) == ["k", "k", "other"]
    assert not (swapped.direct or short.direct or unknown.direct)


def test_only_literal_grids_have_a_direct_form() -> None:
    assert grid3("(3, 2)") == "(3, 2, 1)" and grid3("(1, 2, 3)") == "(1, 2, 3)"
    assert grid3("(n,)") is None and grid3("(1, 2, 3, 4)") is None and grid3("4") is None
