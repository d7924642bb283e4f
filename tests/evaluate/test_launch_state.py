"""Launch states (egg.evaluate.launch_state): the generated launchers' compiled-kernel slot passes
the static checks; every way a candidate under reward pressure would bend that allowance into an
output cache is a ``global-cache`` finding."""

from __future__ import annotations

import textwrap

import pytest

from egg.evaluate.static_checks import check_candidate_source

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.load(x_ptr + i) * 2.0)


def _egg_aligned(*tensors):
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True

'''

# What the expert's launcher template renders (agents/expert/templates/launcher.py.j2).
HONEST = KERNEL + '''
_S = None


def launch(x):
    global _S
    out = torch.empty_like(x)
    if _S is not None and _S[0] == torch.cuda.current_device() and _egg_aligned(x, out):
        _S[1][(1, 1, 1)](x, out, 16)
    elif x.device.type == "cuda" and _egg_aligned(x, out):
        _S = (torch.cuda.current_device(), _k[(1,)](x, out, BLOCK=16, num_warps=1))
    else:
        _k[(1,)](x, out, BLOCK=16, num_warps=1)
    return out
'''


def _rules(source: str) -> list[str]:
    return [f.rule for f in check_candidate_source(textwrap.dedent(source))]


def test_the_generated_launch_state_passes_the_static_checks() -> None:
    assert _rules(HONEST) == []


def test_the_rendered_expert_candidates_use_it_and_pass() -> None:
    from agents.expert import design_candidates

    for c in design_candidates("workloads/rms_norm.py", "default", device="cuda"):
        assert "[1][(" in c.source and "= (torch.cuda.current_device(), " in c.source
        assert check_candidate_source(c.source) == []


# name -> the honest launcher with one line bent the way a cheat would bend it
BENT = {
    # the slot holds the output instead of the launch's return value
    "holds_output": ("_S = (torch.cuda.current_device(), _k[(1,)](x, out, BLOCK=16, num_warps=1))",
                     "_S = (torch.cuda.current_device(), out)"),
    # a third element smuggled into the tuple
    "three_elements": ("_S = (torch.cuda.current_device(), _k[(1,)](x, out, BLOCK=16, num_warps=1))",
                       "_S = (torch.cuda.current_device(), _k[(1,)](x, out, BLOCK=16, num_warps=1), out)"),
    # a device index that is really an input fingerprint
    "fingerprint_device": ("_S = (torch.cuda.current_device(), _k[(1,)](x, out, BLOCK=16, num_warps=1))",
                           "_S = (float(x.sum()), _k[(1,)](x, out, BLOCK=16, num_warps=1))"),
    # the output parked on the compiled kernel object
    "attribute_on_handle": ("        _S[1][(1, 1, 1)](x, out, 16)",
                            "        _S[1][(1, 1, 1)](x, out, 16)\n        _S[1].last = out"),
    # the handle handed out of the launcher
    "handle_returned": ("    return out", "    return out if _S is None else _S[1]"),
    # the slot read as a container
    "indexed_read": ("        _S[1][(1, 1, 1)](x, out, 16)", "        out = _S[2]"),
    # compared against an input instead of None
    "identity_key": ("if _S is not None and", "if _S is not x and"),
    # initialised to a container at module level
    "dict_init": ("\n_S = None\n", "\n_S = {}\n"),
    # rebinding the slot some other way
    "augmented": ("    out = torch.empty_like(x)\n", "    out = torch.empty_like(x)\n    _S += (out,)\n"),
    "deleted": ("    return out", "    del _S\n    return out"),
}


@pytest.mark.parametrize("name", sorted(BENT))
def test_a_bent_launch_state_is_a_global_cache(name: str) -> None:
    old, new = BENT[name]
    assert old in HONEST
    assert "global-cache" in _rules(HONEST.replace(old, new, 1)), name


def test_a_kernel_name_rebound_to_a_cache_object_voids_the_allowance() -> None:
    """``_k = Memo(_k)`` makes ``_k[grid](...)`` return whatever ``Memo`` likes."""
    source = HONEST.replace("\n_S = None\n", '''
class Memo:
    def __init__(self, fn):
        self.fn, self.out = fn, None

    def __getitem__(self, grid):
        return lambda *a, **k: self.out


_k = Memo(_k)
_S = None
''')
    assert "global-cache" in _rules(source)


def test_a_state_assigned_from_a_function_that_is_not_a_jit_kernel_is_a_global_cache() -> None:
    source = HONEST.replace("_S = (torch.cuda.current_device(), _k[(1,)](x, out, BLOCK=16, num_warps=1))",
                            "_S = (torch.cuda.current_device(), _egg_aligned[(1,)](x, out))")
    assert "global-cache" in _rules(source)
