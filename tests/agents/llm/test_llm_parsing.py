from __future__ import annotations

from pathlib import Path

import pytest

from agents.llm.parsing import NO_CODE, extract_code, parse_answer, parse_principle_ids
from egg.vocabulary import Backend

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ADD_RELU = (FIXTURES / "problems" / "add_relu.py").read_text()
LINEAR_SCALE = (FIXTURES / "problems" / "linear_scale.py").read_text()
GOOD_TRITON = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()

LINEAR_NEW = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale(x_ptr, n, s, BLOCK: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def __init__(self, {params}) -> None:
        super().__init__()

    def forward(self, x):
        return x
'''


def fenced(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code}\n```"


def test_fenced_block_is_extracted_with_principles_and_structure() -> None:
    answer = (
        "Plan: one fused kernel.\n\n"
        + fenced(GOOD_TRITON)
        + "\nSTRUCTURE: one fused add+relu kernel\n**PRINCIPLES:** fuse-elementwise, `coalesce`, bogus\n"
    )
    result = parse_answer(answer, ADD_RELU, Backend.TRITON, ["fuse-elementwise", "coalesce"])
    assert result.ok, result.error
    assert result.source == GOOD_TRITON.strip("\n") + "\n"
    assert result.principle_ids == ["fuse-elementwise", "coalesce"]  # unknown "bogus" dropped
    assert result.structure == "one fused add+relu kernel"


def test_of_several_blocks_the_one_defining_modelnew_wins() -> None:
    answer = (
        "Kernel first:\n" + fenced("@triton.jit\ndef k(x):\n    pass")
        + "\nUsage:\n" + fenced("print('hi')", "bash")
        + "\nFull file:\n" + fenced(GOOD_TRITON)
        + "\nand a test:\n" + fenced("m = ModelNew()\n")
    )
    code, error = extract_code(answer)
    assert error is None and code is not None and "class ModelNew" in code
    assert parse_answer(answer, ADD_RELU, Backend.TRITON).ok


def test_bare_code_answer_is_accepted() -> None:
    result = parse_answer(GOOD_TRITON, ADD_RELU, Backend.TRITON)
    assert result.ok, result.error


@pytest.mark.parametrize("answer", ["I would fuse the add and relu.", "Sure.", fenced("x = 1", "cuda")])
def test_no_code(answer: str) -> None:
    result = parse_answer(answer, ADD_RELU, Backend.TRITON)
    assert not result.ok and result.error == NO_CODE


def test_truncated_block_is_reported() -> None:
    result = parse_answer("```python\nimport torch\nclass ModelNew(", ADD_RELU, Backend.TRITON)
    assert not result.ok and result.error is not None and "unterminated" in result.error


def test_syntax_error_names_the_line() -> None:
    broken = GOOD_TRITON.replace("mask = offsets < n_elements", "mask = (offsets < n_elements")
    lineno = broken.strip("\n").splitlines().index("    mask = (offsets < n_elements") + 1
    result = parse_answer(fenced(broken), ADD_RELU, Backend.TRITON)
    assert not result.ok and result.error is not None
    assert result.error.startswith(f"syntax error at line {lineno} `mask = (offsets < n_elements`")
    assert "\n" not in result.error


def test_missing_modelnew() -> None:
    code = GOOD_TRITON.replace("class ModelNew", "class Model")
    result = parse_answer(fenced(code), ADD_RELU, Backend.TRITON)
    assert result.error == "no class ModelNew defined at top level: define class ModelNew(nn.Module)"


def test_signature_must_match_model_of_the_problem() -> None:
    good = LINEAR_NEW.format(params="in_features: int, out_features: int, scale: float")
    assert parse_answer(fenced(good), LINEAR_SCALE, Backend.TRITON).ok
    wrong = LINEAR_NEW.format(params="in_features, scale")
    result = parse_answer(fenced(wrong), LINEAR_SCALE, Backend.TRITON)
    assert result.error == (
        "ModelNew.__init__ takes (in_features, scale) but Model.__init__ takes "
        "(in_features, out_features, scale): use exactly the same parameters in the same order"
    )


def test_triton_backend_needs_a_jit_kernel() -> None:
    code = GOOD_TRITON.replace("@triton.jit\n", "")
    result = parse_answer(fenced(code), ADD_RELU, Backend.TRITON)
    assert result.error is not None and result.error.startswith("no Triton kernel")
    aliased = "from triton import jit\n" + GOOD_TRITON.replace("@triton.jit", "@jit")
    assert parse_answer(fenced(aliased), ADD_RELU, Backend.TRITON).ok


def test_cuda_backend_needs_load_inline() -> None:
    result = parse_answer(fenced(GOOD_TRITON), ADD_RELU, Backend.CUDA)
    assert result.error is not None and result.error.startswith("no CUDA kernel")
    cuda = (
        "import torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
        "ext = load_inline(name='k', cpp_sources='', cuda_sources='')\n"
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    )
    assert parse_answer(fenced(cuda), ADD_RELU, Backend.CUDA).ok


def test_principles_line_inside_code_is_ignored() -> None:
    answer = fenced("# PRINCIPLES: fake\nx = 1") + "\nPRINCIPLES: none\n"
    assert parse_principle_ids(answer) == []
