"""Each reference template runs (Triton interpreter on CPU) and matches torch on odd shapes.

Shapes are chosen so that no dimension divides the block sizes used; fp32 and fp16.
On a CUDA machine the same tests run on the GPU.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import torch
import torch.nn.functional as F

from principles import import_template, load_packs

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16]
TOL = {torch.float32: dict(atol=1e-4, rtol=1e-4), torch.float16: dict(atol=1e-2, rtol=1e-2)}

# The interpreter itself warns (numpy scalar conversion; exp overflow inside sigmoid of large inputs).
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:triton.runtime.interpreter"),
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
]


@pytest.fixture(scope="module")
def templates() -> dict[str, ModuleType]:
    packs = load_packs(entry_points=False)
    return {ref: import_template(packs.template(ref)[1]) for ref in packs.templates()}


def _rand(*shape: int, dtype: torch.dtype, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    return (torch.randn(*shape, device=DEVICE) * scale + shift).to(dtype)


def _check(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> None:
    assert out.shape == ref.shape and out.dtype == dtype
    torch.testing.assert_close(out.float(), ref.to(dtype).float(), **TOL[dtype])


def test_every_builtin_template_is_tested(templates) -> None:
    tested = {"algorithm-structure/fused-elementwise", "algorithm-structure/row-softmax", "algorithm-structure/norm",
              "algorithm-structure/matmul-epilogue", "algorithm-structure/splitk-matmul",
              "algorithm-structure/cumulative-scan", "parallel-mapping/row-reduction",
              "parallel-mapping/persistent-elementwise"}
    assert set(templates) == tested


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ["none", "relu", "gelu_tanh", "silu", "sigmoid"])
def test_fused_elementwise(templates, dtype, activation) -> None:
    fn = templates["algorithm-structure/fused-elementwise"].fused_elementwise
    x, y, bias = _rand(7, 3, 333, dtype=dtype), _rand(7, 3, 333, dtype=dtype), _rand(333, dtype=dtype)
    out = fn(x, y, bias, alpha=0.5, beta=-1.5, activation=activation, BLOCK_SIZE=512, eviction_policy="evict_first")
    v = 0.5 * x.float() - 1.5 * y.float() + bias.float()
    act = {"none": lambda t: t, "relu": torch.relu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
           "silu": F.silu, "sigmoid": torch.sigmoid}[activation]
    _check(out, act(v), dtype)
    _check(fn(x, activation="relu"), torch.relu(x.float()), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block_n", [None, 256])  # None: one pass (row fits); 256 < 1029: online softmax
def test_row_softmax(templates, dtype, block_n) -> None:
    fn = templates["algorithm-structure/row-softmax"].row_softmax
    x = _rand(3, 5, 1029, dtype=dtype, scale=4.0)
    _check(fn(x, BLOCK_N=block_n, eviction_policy="evict_last"), torch.softmax(x.float(), dim=-1), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block_n", [None, 128])  # None: one pass; 128: two sweeps with Welford merging
def test_layer_and_rms_norm(templates, dtype, block_n) -> None:
    fn = templates["algorithm-structure/norm"].norm
    x = _rand(2, 3, 19, 23, dtype=dtype, scale=3.0, shift=5.0)  # |mean| >> 0 exercises cancellation
    w, b = _rand(19, 23, dtype=dtype), _rand(19, 23, dtype=dtype)
    ref = F.layer_norm(x.float(), (19, 23), w.float(), b.float(), eps=1e-5)
    _check(fn(x, w, b, normalized_ndim=2, BLOCK_N=block_n), ref, dtype)
    xf = x.float()
    ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w[0].float()
    _check(fn(x, w[0], kind="rms", eps=1e-6, BLOCK_N=block_n and 16), ref, dtype)
    _check(fn(x, normalized_ndim=1, BLOCK_N=block_n and 16), F.layer_norm(xf, (23,)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("group_m", [1, 3])
def test_matmul_epilogue(templates, dtype, group_m) -> None:
    fn = templates["algorithm-structure/matmul-epilogue"].matmul_epilogue
    a = _rand(2, 37, 75, dtype=dtype, scale=0.5)
    w = _rand(53, 75, dtype=dtype, scale=0.5)  # a Linear weight: b = w.t() is not contiguous
    bias, res = _rand(53, dtype=dtype), _rand(2, 37, 53, dtype=dtype)
    out = fn(a, w.t(), bias, res, alpha=0.7, activation="gelu_tanh", BLOCK_M=16, BLOCK_N=32, BLOCK_K=16,
             GROUP_M=group_m)
    ref = F.gelu(0.7 * (a.float() @ w.float().t()) + bias.float(), approximate="tanh") + res.float()
    _check(out, ref, dtype)
    _check(fn(a[0], w.t(), BLOCK_M=32, BLOCK_N=16, BLOCK_K=32), a[0].float() @ w.float().t(), dtype)


def test_matmul_epilogue_fp32_is_ieee_by_default(templates) -> None:
    source = templates["algorithm-structure/matmul-epilogue"].__file__
    text = open(source).read()
    assert 'input_precision=INPUT_PRECISION' in text and '"ieee" if (a.dtype == torch.float32 and not allow_tf32)' in text


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("split_k", [1, 3, 8])
def test_splitk_matmul(templates, dtype, split_k) -> None:
    fn = templates["algorithm-structure/splitk-matmul"].splitk_matmul
    a, b, bias = _rand(29, 301, dtype=dtype, scale=0.3), _rand(301, 37, dtype=dtype, scale=0.3), _rand(37, dtype=dtype)
    out = fn(a, b, bias, activation="relu", SPLIT_K=split_k, BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, REDUCE_BLOCK=256)
    _check(out, torch.relu(a.float() @ b.float() + bias.float()), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block_n", [None, 128])  # None: the whole row in one chunk; 128: carried chunks
def test_cumulative_scan(templates, dtype, block_n) -> None:
    fn = templates["algorithm-structure/cumulative-scan"].cumulative_scan
    x = _rand(2, 3, 1029, dtype=dtype)
    _check(fn(x, BLOCK_N=block_n), x.float().cumsum(-1), dtype)
    xp = _rand(3, 301, dtype=dtype, scale=0.01, shift=1.0)
    _check(fn(xp, op="prod", BLOCK_N=block_n), xp.float().cumprod(-1), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize(("rows_per_program", "block_n"), [(1, None), (4, 64), (8, None)])
def test_row_reduction(templates, dtype, op, rows_per_program, block_n) -> None:
    fn = templates["parallel-mapping/row-reduction"].row_reduce
    x = _rand(3, 37, 203, dtype=dtype, shift=-2.0)  # mostly negative: a wrong 'other' for max shows
    reference = {"sum": lambda t: t.sum(-1), "mean": lambda t: t.mean(-1), "max": lambda t: t.amax(-1),
                 "min": lambda t: t.amin(-1)}[op]
    out = fn(x, op=op, ROWS_PER_PROGRAM=rows_per_program, BLOCK_N=block_n)
    _check(out, reference(x.float()), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_persistent_elementwise(templates, dtype) -> None:
    fn = templates["parallel-mapping/persistent-elementwise"].persistent_elementwise
    x, y = _rand(3, 1001, 17, dtype=dtype), _rand(3, 1001, 17, dtype=dtype)
    # 2 SMs x 3 programs: each program walks many tiles, the last one partial
    out = fn(x, y, activation="silu", NUM_SMS=2, PROGRAMS_PER_SM=3, BLOCK_SIZE=256)
    _check(out, F.silu(x.float() + y.float()), dtype)
    _check(fn(x, activation="relu", BLOCK_SIZE=512), torch.relu(x.float()), dtype)
