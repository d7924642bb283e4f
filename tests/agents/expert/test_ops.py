"""Every pointwise op the lowering computes natively matches eager torch, through the judge.

Each problem returns many results of one domain, so one fused kernel computes them all and the
judge compares each against eager (fp32 at 1e-4, fp16 at 1e-2, integers and bools exactly).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from expert_helpers import check, problem

from agents.expert.decline import ExpertDecline
from agents.expert.design import analyse
from egg.evaluate.harness import Harness

FLOAT_UNARY = [
    "torch.exp(x)", "torch.exp2(x)", "torch.expm1(x)", "torch.expm1(x * 1e-4)", "torch.log(x.abs() + 0.1)",
    "torch.log2(x.abs() + 0.1)", "torch.log10(x.abs() + 0.1)", "torch.log1p(x.abs())", "torch.log1p(x * 1e-5)",
    "torch.sqrt(x.abs())", "torch.rsqrt(x.abs() + 0.1)", "torch.sin(x)", "torch.cos(x)", "torch.tan(x * 0.5)",
    "torch.tanh(x)", "torch.tanh(x * 1e-3)", "torch.sigmoid(x)", "torch.erf(x)", "torch.sinh(x)", "torch.cosh(x)",
    "torch.reciprocal(x + 3.0)", "-x", "x.abs()", "torch.floor(x * 3)", "torch.ceil(x * 3)", "torch.trunc(x * 3)",
    "torch.round(x * 3)", "torch.round(torch.full_like(x, 2.5))", "torch.frac(x * 3)", "torch.sign(x)",
    "torch.relu(x)", "F.silu(x)", "F.mish(x)", "F.mish(x * 15)", "F.selu(x)", "F.hardsigmoid(x)", "F.hardswish(x)", "F.gelu(x)",
    "F.gelu(x, approximate='tanh')", "F.leaky_relu(x, 0.2)", "F.elu(x, 0.7)", "F.celu(x, 1.3)",
    "F.softplus(x, 2.0, 5.0)", "F.hardtanh(x, -0.5, 0.7)", "x.clamp(-0.3, 0.4)", "x.clamp(min=0.1)", "F.relu6(x * 4)",
    "F.logsigmoid(x)", "F.threshold(x, 0.1, 7.0)", "F.hardshrink(x, 0.3)", "F.softshrink(x, 0.3)",
    "F.tanhshrink(x)", "F.softsign(x)", "x.pow(3)", "x.abs().pow(0.5)", "x.abs() ** 2.5", "x ** -2",
    "torch.pow(2.0, x)", "torch.square(x)", "torch.special.expit(x)", "torch.nan_to_num(torch.log(x))",
    "torch.erfc(x)", "torch.round(x * 7, decimals=2)", "torch.hypot(x, x * 0.5 + 1)",
]
BINARY = [
    "a + b", "a - 2.5 * b", "torch.sub(a, b, alpha=0.5)", "torch.add(a, b, alpha=3)", "a * b",
    "a / (b.abs() + 0.5)", "torch.maximum(a, b)", "torch.minimum(a, b)", "torch.fmax(a, b)", "torch.fmin(a, b)",
    "torch.fmod(a, b.abs() + 0.5)", "torch.remainder(a, b.abs() + 0.5)", "torch.pow(a.abs() + 0.1, b)",
    "torch.where(a > b, a, b)", "a.masked_fill(a < 0, 3.0)", "torch.lerp(a, b, 0.3)", "torch.lerp(a, b, b.sigmoid())",
    "torch.addcmul(a, b, a, value=0.5)", "torch.addcdiv(a, b, b.abs() + 1, value=2.0)", "torch.rsub(a, b)",
    "1.0 - a", "a.clamp(b - 0.5, b + 0.5)", "torch.div(a * 7, b.abs() + 1, rounding_mode='floor')",
    "torch.div(a * 7, b.abs() + 1, rounding_mode='trunc')", "torch.floor_divide(a * 7, b.abs() + 1)",
]
BOOLS = [
    "a > b", "a <= b", "a == a.round()", "a != b", "(a > 0) & (b > 0)", "(a > 0) | (b > 0)", "(a > 0) ^ (b > 0)",
    "~(a > 0)", "torch.isnan(torch.log(a))", "torch.isinf(a / (b * 0))", "torch.isfinite(torch.log(a))",
    "torch.logical_and(a > 0, b < 0)", "torch.logical_not(a > 0)", "torch.where(a > 0, a > b, b > 0.5)",
]
INTS = [
    "i + 3", "i * i", "i - j", "i // 7", "i % 7", "torch.div(i, 7, rounding_mode='trunc')", "i.abs()",
    "torch.bitwise_and(i, 12)", "torch.bitwise_or(i, j)", "i >> 2", "i << 3", "i.clamp(-10, 10)",
    "torch.maximum(i, j)", "(i > j).to(torch.int64)", "i.float() * 0.5", "i / 4", "-i",
]


def _outputs(name: str, exprs: list[str], args: str, inputs: str, tmp: Path) -> Path:
    body = "return (\n" + "".join(f"    {e},\n" for e in exprs) + ")"
    return problem(tmp, name, body, inputs, header=f"# args: {args}")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float_unary_and_activations(dtype: str, harness: Harness, tmp_path: Path) -> None:
    exprs = FLOAT_UNARY if dtype == "float32" else [e for e in FLOAT_UNARY if "1e-" not in e and "sinh" not in e
                                                    and "cosh" not in e and "exp2" not in e]
    path = _outputs("unary", exprs, "x", f"[(torch.randn(37, 19) * 2).to(torch.{dtype})]", tmp_path)
    check(harness, path, tmp_path, kernels=1, torch_ops=[])


def test_binary_ops(harness: Harness, tmp_path: Path) -> None:
    path = _outputs("binary", BINARY, "a, b", "[torch.randn(33, 21) * 2, torch.randn(33, 21)]", tmp_path)
    check(harness, path, tmp_path, kernels=1, torch_ops=[])


def test_comparisons_and_logic(harness: Harness, tmp_path: Path) -> None:
    path = _outputs("bools", BOOLS, "a, b", "[torch.randn(29, 17), torch.randn(29, 17)]", tmp_path)
    check(harness, path, tmp_path, kernels=1, torch_ops=[])


def test_integer_ops(harness: Harness, tmp_path: Path) -> None:
    inputs = "[torch.randint(-50, 50, (23, 9)), torch.randint(1, 30, (23, 9))]"
    path = _outputs("ints", INTS, "i, j", inputs, tmp_path)
    check(harness, path, tmp_path, kernels=1, torch_ops=[])


def test_fp16_chains_round_per_op_like_eager(harness: Harness, tmp_path: Path) -> None:
    """Each 16-bit op's result is rounded to fp16 before the next op reads it, as eager does."""
    exprs = ["((h * 3.1 + 0.7).exp() * h).sigmoid()", "(h * h * h - h).tanh() * 100", "h.float() * 1.5 + h",
             "(h / 3).half() * 3 - h"]
    path = _outputs("fp16_chain", exprs, "h", "[(torch.randn(64, 33) * 2).half()]", tmp_path)
    check(harness, path, tmp_path, kernels=1)


def test_random_ops_are_declined(tmp_path: Path) -> None:
    path = problem(tmp_path, "dropout", "return F.dropout(x, 0.5, training=True)", "[torch.randn(8, 8)]")
    with pytest.raises(ExpertDecline, match="random"):
        analyse(path)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_integers_become_16_bit_floats_exactly(dtype: str, harness: Harness, tmp_path: Path) -> None:
    """Integers of a known narrow range (nibbles, centred nibbles, a byte) are converted by the exponent
    trick (Writer._exact_half): every value of a byte, through the judge, matches torch's conversion;
    a full int16 range takes the plain conversion."""
    from agents.expert.design import design_candidates

    forward = (f"low = ((q & 15).to(torch.int8) - 8).to(torch.{dtype})\nhigh = (q >> 4).to(torch.{dtype})\n"
               f"byte = q.to(torch.{dtype}) * s\nwide = (q.to(torch.int16) * 97).to(torch.{dtype})\n"
               "return low * s, high + s, byte, wide")
    path = problem(tmp_path, f"nibbles_{dtype}", forward,
                   f"[torch.arange(256, dtype=torch.uint8).repeat(4), torch.randn(1024, dtype=torch.{dtype})]",
                   header="# args: q, s")
    check(harness, path, tmp_path)
    source = design_candidates(path, "default", "cpu")[0].source
    # the nibbles (16 values each) take the trick, bf16 only where 128 consecutive values fit its significand
    assert source.count("bitcast=True") == (3 if dtype == "float16" else 2), source


MISH_EDGES = ("def _edges():\n    x = torch.randn(64) * 30\n"
              "    x[:8] = torch.tensor([float('inf'), float('-inf'), float('nan'), 20.0, 20.5, 19.5, -20.0, -95.0])\n"
              "    return x\n")


@pytest.mark.parametrize(("name", "body", "fused"), [
    ("library", "return F.mish(x)", True),
    ("by_hand", "return x * torch.tanh(F.softplus(x))", True),
    ("by_hand_no_threshold", "return torch.tanh(torch.log1p(torch.exp(x))) * x", True),
    # a threshold under 20 changes values (softplus(x) is x above it): the formula as written
    ("threshold_5", "return x * torch.tanh(F.softplus(x, threshold=5))", False),
])
def test_mish_in_one_exp_keeps_torchs_threshold_and_non_finite_values(name: str, body: str, fused: bool,
                                                                      harness: Harness, tmp_path: Path) -> None:
    """``x * tanh(softplus(x))`` however it is spelled is rendered as ``x * n / (n + 2)``, ``n = e^x
    (e^x + 2)`` (one exp, one division): torch's threshold at 20, its NaN for -inf (-inf * tanh(0))
    and NaN inputs, judged."""
    path = problem(tmp_path, name, body, "[_edges()]", header=MISH_EDGES)
    (cand,) = check(harness, path, tmp_path, kernels=1, torch_ops=[])[:1]
    kernel = cand.source.split("# ---- kernels ----")[-1]
    assert ("_egg_mish(" in kernel) is fused and ("_egg_log1p(" in kernel) is not fused, kernel
