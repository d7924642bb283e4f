"""The built-in packs' reference templates are the expert's own kernels: each file is exactly what
the expert codegen renders for its example problem (one source of truth, tested once here; the
kernels themselves are run by the expert's tests)."""

from __future__ import annotations

import pytest

from agents.expert.reference import EXAMPLES, entry_of, render_reference
from principles import BUILTIN_DIR, load_packs


def test_every_builtin_template_is_an_expert_rendering() -> None:
    packs = load_packs(entry_points=False)
    builtin = {ref: path for ref, (t, path) in ((r, packs.template(r)) for r in packs.templates())
               if path.is_relative_to(BUILTIN_DIR)}
    assert set(builtin) == set(EXAMPLES)
    for ref, path in builtin.items():
        assert path == BUILTIN_DIR / EXAMPLES[ref].path
        assert packs.template(ref)[0].entry == entry_of(path.read_text())


@pytest.mark.parametrize("ref", sorted(EXAMPLES))
def test_cited_text_is_what_the_expert_renders(ref: str) -> None:
    text = render_reference(ref)
    assert (BUILTIN_DIR / EXAMPLES[ref].path).read_text() == text, (
        f"{ref} drifted from the expert's kernels: run `python -m agents.expert.reference`")
    assert "@triton.jit" in text and "Generated, do not edit" in text


def test_the_drift_the_issue_found_is_gone() -> None:
    """The norm reference used ``1.0 / tl.sqrt``; the expert's kernel (which passes the bf16
    tolerance) uses rsqrt, and so does the reference now."""
    norm = (BUILTIN_DIR / EXAMPLES["algorithm-structure/norm"].path).read_text()
    assert "tl.rsqrt" in norm and "1.0 / tl.sqrt" not in norm
    splitk = (BUILTIN_DIR / EXAMPLES["algorithm-structure/splitk-matmul"].path).read_text()
    assert "algorithm-structure/split-k-for-small-mn" in splitk  # the example does split K
