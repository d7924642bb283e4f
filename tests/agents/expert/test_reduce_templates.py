"""Reduction-family templates: render each plan into a real module, run it (Triton interpreter on
CPU, TRITON_INTERPRET=1 from tests/conftest.py) and compare with torch.

Shapes are tiny and deliberately not multiples of any block; every family is also run with a
non-default config (small blocks, forced split / online / split structures) so the loops, masks
and second passes are exercised, not only the one-tile fast path.
"""

from __future__ import annotations

import importlib.util
import uuid
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from agents.expert.kernels import (
    reduce_basic,
    reduce_loss,
    reduce_norm,
    reduce_pairwise,
    reduce_pool,
    reduce_scan,
    reduce_softmax,
)
from agents.expert.kernels.base import GroupSpec, NodeSpec, ValueSpec
from agents.expert.kernels.expr import helper_source
from agents.expert.kernels.reduce_common import expr_module

HEADER = "import torch, triton, triton.language as tl, math\n\n"
# The interpreter itself warns (numpy scalar conversion; inf - inf in masked lanes): not ours.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::RuntimeWarning")
BASIC = reduce_basic.TEMPLATES[0]
SOFTMAX = reduce_softmax.TEMPLATES[0]
NORM = reduce_norm.TEMPLATES[0]
SCAN = reduce_scan.TEMPLATES[0]
LOSS = reduce_loss.TEMPLATES[0]
PAIR = reduce_pairwise.TEMPLATES[0]
POOL = reduce_pool.TEMPLATES[0]
TOL = {torch.float32: 1e-4, torch.float16: 1e-2}


def dt(t: torch.dtype) -> str:
    return str(t).removeprefix("torch.")


def V(name: str, t: torch.Tensor | Any) -> ValueSpec:
    if isinstance(t, torch.Tensor):
        return ValueSpec(name=name, shape=list(t.shape), dtype=dt(t.dtype))
    return ValueSpec(name=name, is_tensor=False, dtype=type(t).__name__, value=t)


def group(nodes: list[NodeSpec], inputs: list[ValueSpec], kind: str = "reduction",
          anchor: str | None = None) -> GroupSpec:
    return GroupSpec(nodes=nodes, inputs=inputs, output=nodes[-1].name, kind=kind, anchor=anchor)


def single(op: str, inputs: dict[str, Any], ref: torch.Tensor, operands: list[Any] | None = None,
           kind: str = "reduction", **kwargs: Any) -> GroupSpec:
    node = NodeSpec(name="res", op=op, operands=operands or list(inputs), kwargs=kwargs,
                    shape=list(ref.shape), dtype=dt(ref.dtype))
    return group([node], [V(n, t) for n, t in inputs.items()], kind)


def run(template: Any, g: GroupSpec, config: dict[str, Any], tmp_path: Path, *args: Any) -> torch.Tensor:
    assert template.match(g), f"{template.name} should match {[n.op for n in g.nodes]}"
    plan = template.render(g, config, "launch")
    assert plan.launcher == "launch" and plan.structure
    module = expr_module()
    helpers = module.helper_source(plan.source) if module is not None else ""
    path = tmp_path / f"k_{uuid.uuid4().hex}.py"
    path.write_text(HEADER + helpers + "\n" + plan.source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, plan.launcher)(*args)


def check(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert out.shape == ref.shape and out.dtype == ref.dtype, (out.shape, ref.shape, out.dtype, ref.dtype)
    tol = TOL.get(ref.dtype, 0)
    if ref.dtype.is_floating_point:
        torch.testing.assert_close(out, ref, atol=tol, rtol=tol, equal_nan=True)
    else:
        assert torch.equal(out, ref)


def fp16_ref(fn: Any, *args: torch.Tensor) -> torch.Tensor:
    """torch's CUDA semantics for 16-bit inputs: fp32 math, one rounding at the end."""
    return fn(*[a.float() for a in args]).half()


torch.manual_seed(0)
X = torch.randn(3, 37, 5)
SMALL = {"block_r": 8, "block_m": 2, "block_i": 2, "split": 3}  # loops, masks and two passes


# ---------------------------------------------------------------------------------------------
# reduce_basic
# ---------------------------------------------------------------------------------------------

BASIC_CASES = [
    ("sum", {"dim": 1}, lambda x: x.sum(1)),
    ("sum", {"dim": -1, "keepdim": True}, lambda x: x.sum(-1, keepdim=True)),
    ("sum", {}, lambda x: x.sum()),
    ("mean", {"dim": 0}, lambda x: x.mean(0)),
    ("mean", {"dim": [1, 2], "keepdim": True}, lambda x: x.mean((1, 2), keepdim=True)),
    ("amax", {"dim": 1}, lambda x: x.amax(1)),
    ("amin", {"dim": -1, "keepdim": True}, lambda x: x.amin(-1, keepdim=True)),
    ("max", {}, lambda x: x.max()),
    ("argmax", {"dim": 1}, lambda x: x.argmax(1)),
    ("argmin", {"dim": -1, "keepdim": True}, lambda x: x.argmin(-1, keepdim=True)),
    ("argmax", {}, lambda x: x.argmax()),
    ("prod", {"dim": 1}, lambda x: (x * 0.2 + 1).prod(1)),
    ("var", {"dim": 1}, lambda x: x.var(1)),
    ("std", {"dim": -1, "correction": 0}, lambda x: x.std(-1, correction=0)),
    ("var", {}, lambda x: x.var()),
    ("norm", {"p": 2, "dim": 1, "keepdim": True}, lambda x: x.norm(p=2, dim=1, keepdim=True)),
    ("norm", {"p": "fro"}, lambda x: x.norm()),
    ("vector_norm", {"ord": 1, "dim": -1}, lambda x: torch.linalg.vector_norm(x, 1, dim=-1)),
    ("vector_norm", {"ord": "inf", "dim": 0}, lambda x: torch.linalg.vector_norm(x, float("inf"), dim=0)),
    ("vector_norm", {"ord": 3, "dim": 1}, lambda x: torch.linalg.vector_norm(x, 3, dim=1)),
    ("linalg_norm", {"dim": 1}, lambda x: torch.linalg.norm(x, dim=1)),
    ("any", {"dim": 1}, lambda x: (x > 1).any(1)),
    ("all", {}, lambda x: (x > -3).all()),
]


@pytest.mark.parametrize("case", BASIC_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("config", [{}, SMALL], ids=["default", "small"])
def test_basic_reductions(case: tuple, config: dict[str, Any], tmp_path: Path) -> None:
    op, kwargs, fn = case
    x = X * 0.2 + 1 if op == "prod" else X
    x = (X > (1 if op == "any" else -3)).float() if op in ("any", "all") else x
    ref = fn(X)
    g = single(op, {"x": x}, ref, **kwargs)
    check(run(BASIC, g, config, tmp_path, x), ref)


@pytest.mark.parametrize("op,kwargs", [("sum", {"dim": 1}), ("mean", {}), ("amax", {"dim": 0}),
                                       ("var", {"dim": -1})])
def test_basic_fp16(op: str, kwargs: dict[str, Any], tmp_path: Path) -> None:
    x = X.half()
    ref = fp16_ref(lambda t: getattr(torch, op)(t, **kwargs), x)
    check(run(BASIC, single(op, {"x": x}, ref, **kwargs), SMALL, tmp_path, x), ref)


@pytest.mark.parametrize("index", [0, 1])
def test_max_with_dim_and_getitem(index: int, tmp_path: Path) -> None:
    ref = torch.max(X, 1)[index]
    nodes = [NodeSpec(name="m", op="max", operands=["x"], kwargs={"args": [1]}, shape=list(ref.shape)),
             NodeSpec(name="g", op="tuple_getitem", operands=["m"], kwargs={"index": index},
                      shape=list(ref.shape), dtype=dt(ref.dtype))]
    check(run(BASIC, group(nodes, [V("x", X)]), SMALL, tmp_path, X), ref)


def test_basic_strided_input(tmp_path: Path) -> None:
    x = torch.randn(5, 37, 3).transpose(0, 2)  # non-contiguous: strides are passed, no copy
    ref = x.sum(1)
    check(run(BASIC, single("sum", {"x": x}, ref, dim=1), {}, tmp_path, x), ref)


# ---------------------------------------------------------------------------------------------
# reduce_softmax
# ---------------------------------------------------------------------------------------------

SOFTMAX_CASES = [
    ("softmax", {"dim": 1}, lambda x: x.softmax(1)),
    ("softmax", {"dim": -1}, lambda x: x.softmax(-1)),
    ("log_softmax", {"dim": 0}, lambda x: x.log_softmax(0)),
    ("softmin", {"dim": 2}, lambda x: F.softmin(x, 2)),
    ("logsumexp", {"dim": [1]}, lambda x: x.logsumexp(1)),
    ("logsumexp", {"dim": [1, 2], "keepdim": True}, lambda x: x.logsumexp((1, 2), keepdim=True)),
    ("logsumexp", {"dim": -1}, lambda x: x.logsumexp(-1)),
]
SOFTMAX_CONFIGS = [{}, {"structure": "online", "block_r": 8, "block_i": 2, "block_m": 2},
                   {"structure": "one_pass", "block_m": 2, "block_i": 2}]


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("config", SOFTMAX_CONFIGS, ids=["default", "online", "one_pass"])
def test_softmax_family(case: tuple, config: dict[str, Any], tmp_path: Path) -> None:
    op, kwargs, fn = case
    ref = fn(X)
    check(run(SOFTMAX, single(op, {"x": X}, ref, kind="softmax", **kwargs), config, tmp_path, X), ref)


@pytest.mark.parametrize("structure", ["one_pass", "online"])
def test_softmax_fp16(structure: str, tmp_path: Path) -> None:
    x = X.half()
    ref = fp16_ref(lambda t: t.softmax(1), x)
    g = single("softmax", {"x": x}, ref, kind="softmax", dim=1)
    check(run(SOFTMAX, g, {"structure": structure, "block_r": 16}, tmp_path, x), ref)


def test_softmax_one_pass_falls_back_when_row_too_long(tmp_path: Path) -> None:
    x = torch.randn(2, 300)
    ref = x.softmax(-1)
    g = single("softmax", {"x": x}, ref, kind="softmax", dim=-1)
    check(run(SOFTMAX, g, {"structure": "one_pass", "max_block": 64, "block_r": 32}, tmp_path, x), ref)


# ---------------------------------------------------------------------------------------------
# reduce_norm
# ---------------------------------------------------------------------------------------------

XN = torch.randn(3, 6, 5, 7) * 3 + 2
W6, B6 = torch.randn(6), torch.randn(6)
W57, B57 = torch.randn(5, 7), torch.randn(5, 7)
NORM_CASES = [
    ("layer_norm", {"w": W57, "b": B57}, {"normalized_shape": [5, 7], "eps": 1e-5},
     lambda x, w, b: F.layer_norm(x, [5, 7], w, b)),
    ("layer_norm", {}, {"normalized_shape": [7], "elementwise_affine": False}, lambda x: F.layer_norm(x, [7])),
    ("rms_norm", {"w": W57[0]}, {"normalized_shape": [7], "eps": None}, lambda x, w: F.rms_norm(x, [7], w)),
    ("group_norm", {"w": W6, "b": B6}, {"num_groups": 3, "eps": 1e-5, "affine": True},
     lambda x, w, b: F.group_norm(x, 3, w, b)),
    ("instance_norm", {}, {"eps": 1e-5, "affine": False}, lambda x: F.instance_norm(x)),
]
NORM_CONFIGS = [{}, {"structure": "split", "block_l": 8, "split": 3},
                {"structure": "split", "block_l": 16, "split": 0}]


@pytest.mark.parametrize("case", NORM_CASES, ids=lambda c: c[0])
@pytest.mark.parametrize("config", NORM_CONFIGS, ids=["one_pass", "split3", "split_auto"])
def test_row_norms(case: tuple, config: dict[str, Any], tmp_path: Path) -> None:
    op, params, kwargs, fn = case
    ref = fn(XN, *params.values())
    g = single(op, {"x": XN, **params}, ref, kind="normalization", **kwargs)
    check(run(NORM, g, config, tmp_path, XN, *params.values()), ref)


def test_instance_norm_affine_module_operands(tmp_path: Path) -> None:
    ref = F.instance_norm(XN, weight=W6, bias=B6)
    g = single("instance_norm", {"x": XN, "w": W6, "b": B6}, ref, ["x", None, None, "w", "b"],
               kind="normalization", eps=1e-5, affine=True, training=True)
    check(run(NORM, g, {"structure": "split", "block_l": 8}, tmp_path, XN, W6, B6), ref)


def test_layer_norm_fp16(tmp_path: Path) -> None:
    x, w, b = XN.half(), W57.half(), B57.half()
    ref = fp16_ref(lambda t, u, v: F.layer_norm(t, [5, 7], u, v), x, w, b)
    g = single("layer_norm", {"x": x, "w": w, "b": b}, ref, kind="normalization", normalized_shape=[5, 7])
    check(run(NORM, g, {}, tmp_path, x, w, b), ref)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("config", [{}, {"split": 2, "block_s": 8, "block_c": 2, "block": 64}],
                         ids=["default", "small"])
def test_batch_norm_updates_running_stats(training: bool, config: dict[str, Any], tmp_path: Path) -> None:
    rm, rv = torch.randn(6), torch.rand(6) + 0.5
    rm_ref, rv_ref, rm_out, rv_out = rm.clone(), rv.clone(), rm.clone(), rv.clone()
    ref = F.batch_norm(XN, rm_ref, rv_ref, W6, B6, training=training, momentum=0.1, eps=1e-5)
    g = single("batch_norm", {"x": XN, "rm": rm, "rv": rv, "w": W6, "b": B6}, ref, kind="normalization",
               training=training, momentum=0.1, eps=1e-5, affine=True, track_running_stats=True)
    out = run(NORM, g, config, tmp_path, XN, rm_out, rv_out, W6, B6)
    check(out, ref)
    torch.testing.assert_close(rm_out, rm_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rv_out, rv_ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_module_counter_and_cumulative_momentum(momentum: float | None, tmp_path: Path) -> None:
    """The optional 6th operand is nn.BatchNorm's num_batches_tracked: counted like the module."""
    ref_mod = torch.nn.BatchNorm2d(6, momentum=momentum)
    mine = {k: v.clone() for k, v in ref_mod.state_dict().items()}
    ref = ref_mod(XN)
    args = [XN, mine["running_mean"], mine["running_var"], mine["weight"], mine["bias"],
            mine["num_batches_tracked"]]
    names = ["x", "rm", "rv", "w", "b", "nbt"]
    g = single("batch_norm", dict(zip(names, args)), ref, kind="normalization", training=True,
               momentum=momentum, eps=1e-5, affine=True, track_running_stats=True)
    for _ in range(2):  # the second call sees the updated buffers
        out = run(NORM, g, {"split": 2}, tmp_path, *args)
    ref = ref_mod(XN)
    check(out, ref)
    for k, v in ref_mod.state_dict().items():
        torch.testing.assert_close(mine[k], v, atol=1e-5, rtol=1e-5)


def test_batch_norm_1d_without_running_stats(tmp_path: Path) -> None:
    x = torch.randn(37, 6)
    ref = F.batch_norm(x, None, None, training=True)
    g = single("batch_norm", {"x": x}, ref, ["x", None, None, None, None], kind="normalization",
               training=True, momentum=0.1, eps=1e-5)
    check(run(NORM, g, {}, tmp_path, x), ref)


# ---------------------------------------------------------------------------------------------
# reduce_scan
# ---------------------------------------------------------------------------------------------

def _exclusive(x: torch.Tensor, d: int) -> torch.Tensor:
    c = torch.cumsum(x.narrow(d, 0, x.size(d) - 1), d)
    return torch.cat([torch.zeros_like(x.select(d, 0).unsqueeze(d)), c], d)


XS = torch.rand(3, 37, 5) + 0.5
SCAN_CASES = [
    ("cumsum", {"dim": 1}, lambda x: x.cumsum(1)),
    ("cumsum", {"dim": -1}, lambda x: x.cumsum(-1)),
    ("cumsum", {"dim": 0}, lambda x: x.cumsum(0)),
    ("cumprod", {"dim": 1}, lambda x: x.cumprod(1)),
    ("cumprod", {"dim": 2, "reverse": True}, lambda x: x.flip(2).cumprod(2).flip(2)),
    ("cumsum", {"dim": 1, "reverse": True}, lambda x: x.flip(1).cumsum(1).flip(1)),
    ("cumsum", {"dim": 1, "exclusive": True}, lambda x: _exclusive(x, 1)),
    ("cumsum", {"dim": 2, "exclusive": True, "reverse": True}, lambda x: _exclusive(x.flip(2), 2).flip(2)),
]


@pytest.mark.parametrize("case", SCAN_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("config", [{}, {"block_r": 4, "block_i": 2, "block_m": 2}], ids=["default", "small"])
def test_scans(case: tuple, config: dict[str, Any], tmp_path: Path) -> None:
    op, kwargs, fn = case
    ref = fn(XS)
    check(run(SCAN, single(op, {"x": XS}, ref, kind="scan", **kwargs), config, tmp_path, XS), ref)


def test_scan_flip_idiom_and_fp16(tmp_path: Path) -> None:
    shape = list(XS.shape)
    nodes = [NodeSpec(name="f1", op="flip", operands=["x"], kwargs={"dims": [1]}, shape=shape),
             NodeSpec(name="c", op="cumsum", operands=["f1"], kwargs={"dim": 1}, shape=shape),
             NodeSpec(name="f2", op="flip", operands=["c"], kwargs={"dims": [1]}, shape=shape)]
    check(run(SCAN, group(nodes, [V("x", XS)], "scan"), {"block_r": 8}, tmp_path, XS),
          XS.flip(1).cumsum(1).flip(1))
    xh = XS.half()
    ref = fp16_ref(lambda t: t.cumsum(1), xh)
    check(run(SCAN, single("cumsum", {"x": xh}, ref, kind="scan", dim=1), {"block_r": 8}, tmp_path, xh), ref)


# ---------------------------------------------------------------------------------------------
# reduce_loss / reduce_pairwise
# ---------------------------------------------------------------------------------------------

A, B = torch.randn(6, 37), torch.randn(6, 37)
PM = torch.randint(0, 2, (37,)).float() * 2 - 1
P, T = torch.rand(6, 37).clamp(0.05, 0.95), torch.rand(6, 37)
LOSS_CASES = [
    ("mse_loss", {}, (A, B), F.mse_loss),
    ("l1_loss", {"reduction": "sum"}, (A, B), lambda x, y: F.l1_loss(x, y, reduction="sum")),
    ("smooth_l1_loss", {"beta": 0.5}, (A, B), lambda x, y: F.smooth_l1_loss(x, y, beta=0.5)),
    ("huber_loss", {"delta": 0.7, "reduction": "none"}, (A, B),
     lambda x, y: F.huber_loss(x, y, delta=0.7, reduction="none")),
    ("kl_div", {"reduction": "batchmean"}, (P.log(), T), lambda x, y: F.kl_div(x, y, reduction="batchmean")),
    ("kl_div", {"reduction": "sum", "log_target": True}, (P.log(), T.log()),
     lambda x, y: F.kl_div(x, y, reduction="sum", log_target=True)),
    ("hinge_embedding_loss", {"margin": 0.5}, (A, PM),
     lambda x, y: F.hinge_embedding_loss(x, y.expand_as(x), margin=0.5)),
    ("soft_margin_loss", {}, (A, torch.sign(B)), F.soft_margin_loss),
    ("binary_cross_entropy", {}, (P, T), F.binary_cross_entropy),
    ("binary_cross_entropy_with_logits", {"reduction": "sum"}, (A, T),
     lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="sum")),
    ("margin_ranking_loss", {"margin": 0.1}, (A, B, torch.sign(torch.randn(6, 37))),
     lambda x, y, z: F.margin_ranking_loss(x, y, z, margin=0.1)),
]


@pytest.mark.parametrize("case", LOSS_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("config", [{}, SMALL], ids=["default", "small"])
def test_pointwise_losses(case: tuple, config: dict[str, Any], tmp_path: Path) -> None:
    op, kwargs, args, fn = case
    ref = fn(*args)
    named = dict(zip("xyz", args))
    check(run(LOSS, single(op, named, ref, kind="loss", **kwargs), config, tmp_path, *args), ref)


def test_mse_loss_fp16(tmp_path: Path) -> None:
    a, b = A.half(), B.half()
    ref = fp16_ref(F.mse_loss, a, b)
    check(run(LOSS, single("mse_loss", {"x": a, "y": b}, ref, kind="loss"), SMALL, tmp_path, a, b), ref)


TG = torch.randint(0, 37, (7,))
TG[2] = -100
XC = torch.randn(7, 37)
CLASS_CASES = [
    ("cross_entropy", {}, F.cross_entropy),
    ("cross_entropy", {"reduction": "sum", "label_smoothing": 0.1},
     lambda x, t: F.cross_entropy(x, t, reduction="sum", label_smoothing=0.1)),
    ("cross_entropy", {"reduction": "none"}, lambda x, t: F.cross_entropy(x, t, reduction="none")),
    ("nll_loss", {}, lambda x, t: F.nll_loss(x, t)),
]


@pytest.mark.parametrize("case", CLASS_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("config", [{}, {"block_r": 8, "block_m": 2}], ids=["default", "small"])
def test_class_losses(case: tuple, config: dict[str, Any], tmp_path: Path) -> None:
    op, kwargs, fn = case
    x = XC.log_softmax(1) if op == "nll_loss" else XC
    ref = fn(x, TG)
    g = single(op, {"x": x, "t": TG}, ref, ["x", "t", None], kind="loss", ignore_index=-100, **kwargs)
    check(run(LOSS, g, config, tmp_path, x, TG), ref)


X4, Y4 = torch.randn(2, 5, 3, 4), torch.randn(2, 5, 3, 4)
PAIR_CASES = [
    ("cosine_similarity", {"dim": 1}, (A, B), lambda p, q: F.cosine_similarity(p, q, dim=1)),
    ("cosine_similarity", {"dim": 1, "eps": 1e-6}, (X4, Y4), lambda p, q: F.cosine_similarity(p, q, dim=1, eps=1e-6)),
    ("cosine_similarity", {"dim": -1}, (X4, Y4[:1]), lambda p, q: F.cosine_similarity(p, q, dim=-1)),
    ("pairwise_distance", {"p": 2.0, "keepdim": True}, (A, B), lambda p, q: F.pairwise_distance(p, q, keepdim=True)),
    ("pairwise_distance", {"p": 1.5}, (A, B), lambda p, q: F.pairwise_distance(p, q, p=1.5)),
    ("triplet_margin_loss", {"margin": 1.0}, (A, B, P), lambda p, q, r: F.triplet_margin_loss(p, q, r)),
    ("triplet_margin_loss", {"margin": 0.5, "swap": True, "reduction": "none", "p": 1}, (A, B, P),
     lambda p, q, r: F.triplet_margin_loss(p, q, r, margin=0.5, swap=True, reduction="none", p=1)),
    ("cosine_embedding_loss", {"margin": 0.2, "reduction": "sum"}, (A, B, torch.sign(torch.randn(6))),
     lambda p, q, r: F.cosine_embedding_loss(p, q, r, margin=0.2, reduction="sum")),
]


@pytest.mark.parametrize("case", PAIR_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("config", [{}, {"block_r": 8, "block_m": 2, "block_i": 2}], ids=["default", "small"])
def test_pairwise(case: tuple, config: dict[str, Any], tmp_path: Path) -> None:
    op, kwargs, args, fn = case
    ref = fn(*args)
    check(run(PAIR, single(op, dict(zip("xyz", args)), ref, kind="loss", **kwargs), config, tmp_path, *args), ref)


# ---------------------------------------------------------------------------------------------
# reduce_pool
# ---------------------------------------------------------------------------------------------

X1, X2, X3 = torch.randn(2, 3, 29), torch.randn(2, 3, 13, 11), torch.randn(1, 2, 5, 6, 7)
POOL_CASES = [
    ("max_pool1d", X1, {"kernel_size": 4, "stride": 1, "padding": 2, "dilation": 3}, lambda x: F.max_pool1d(x, 4, 1, 2, 3)),
    ("avg_pool1d", X1, {"kernel_size": 4, "stride": 2, "padding": 1}, lambda x: F.avg_pool1d(x, 4, 2, 1)),
    ("max_pool2d", X2, {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 1, "ceil_mode": False},
     lambda x: F.max_pool2d(x, 3, 2, 1)),
    ("max_pool2d", X2, {"kernel_size": [2, 3], "stride": [], "padding": [1, 0], "dilation": [2, 1]},
     lambda x: F.max_pool2d(x, (2, 3), None, (1, 0), (2, 1))),
    ("avg_pool2d", X2, {"kernel_size": 3, "stride": 1, "padding": 1, "count_include_pad": False},
     lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)),
    ("avg_pool2d", X2, {"kernel_size": 4, "padding": 2}, lambda x: F.avg_pool2d(x, 4, padding=2)),
    ("avg_pool2d", X2, {"kernel_size": 3, "stride": 2, "divisor_override": 5},
     lambda x: F.avg_pool2d(x, 3, 2, divisor_override=5)),
    ("max_pool3d", X3, {"kernel_size": 3, "stride": 2, "padding": 1}, lambda x: F.max_pool3d(x, 3, 2, 1)),
    ("avg_pool3d", X3, {"kernel_size": 2, "stride": 2, "padding": 1, "count_include_pad": False},
     lambda x: F.avg_pool3d(x, 2, 2, 1, count_include_pad=False)),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: f"{c[0]}-{c[2]}")
@pytest.mark.parametrize("config", [{}, {"block_h": 4, "block_w": 4}], ids=["default", "small"])
def test_pooling(case: tuple, config: dict[str, Any], tmp_path: Path) -> None:
    op, x, kwargs, fn = case
    ref = fn(x)
    check(run(POOL, single(op, {"x": x}, ref, kind="pooling", **kwargs), config, tmp_path, x), ref)


def test_max_pool_fp16(tmp_path: Path) -> None:
    x = X2.half()
    ref = F.max_pool2d(x.float(), 3, 2, 1).half()
    check(run(POOL, single("max_pool2d", {"x": x}, ref, kind="pooling", kernel_size=3, stride=2, padding=1),
              {}, tmp_path, x), ref)


# ---------------------------------------------------------------------------------------------
# prologue / epilogue fusion (elementwise nodes through agents.expert.kernels.expr)
# ---------------------------------------------------------------------------------------------

needs_expr = pytest.mark.skipif(expr_module() is None, reason="agents/expert/kernels/expr.py missing")


def N(name: str, op: str, operands: list[Any], like: torch.Tensor, **kwargs: Any) -> NodeSpec:
    return NodeSpec(name=name, op=op, operands=operands, kwargs=kwargs, shape=list(like.shape),
                    dtype=dt(like.dtype))


@needs_expr
@pytest.mark.parametrize("config", [{}, SMALL], ids=["default", "small"])
def test_fused_hinge_mean_with_broadcast_operand(config: dict[str, Any], tmp_path: Path) -> None:
    # KernelBench 100: torch.mean(torch.clamp(1 - predictions * targets, min=0)), targets [D]
    p, t = A, PM
    m = p * t
    s = 1 - m
    c = torch.clamp(s, min=0)
    ref = c.mean()
    nodes = [N("m", "mul", ["p", "t"], m), N("s", "sub", [1.0, "m"], s), N("c", "clamp", ["s"], c, min=0),
             N("res", "mean", ["c"], ref)]
    g = group(nodes, [V("p", p), V("t", t)], anchor="res")
    check(run(BASIC, g, config, tmp_path, p, t), ref)


@needs_expr
def test_fused_reduction_epilogue_with_scalar_and_bias(tmp_path: Path) -> None:
    bias = torch.randn(5)
    s = X.sum(1)
    ref = s * 0.5 + bias
    nodes = [N("s", "sum", ["x"], s, dim=1), N("m", "mul", ["s", "k"], s), N("res", "add", ["m", "bias"], ref)]
    g = group(nodes, [V("x", X), V("k", 0.5), V("bias", bias)], anchor="s")
    check(run(BASIC, g, SMALL, tmp_path, X, 0.5, bias), ref)


@needs_expr
@pytest.mark.parametrize("op,kwargs", [("var", {"dim": 1}), ("argmax", {"dim": -1}), ("sum", {})])
def test_fused_prologue_reductions(op: str, kwargs: dict[str, Any], tmp_path: Path) -> None:
    a = torch.abs(X)
    b = a * 3.0
    ref = getattr(torch, op)(b, **kwargs)
    nodes = [N("a", "abs", ["x"], a), N("b", "mul", ["a", 3.0], b), N("res", op, ["b"], ref, **kwargs)]
    check(run(BASIC, group(nodes, [V("x", X)], anchor="res"), SMALL, tmp_path, X), ref)


@needs_expr
@pytest.mark.parametrize("structure", ["one_pass", "online"])
def test_fused_softmax_prologue_epilogue(structure: str, tmp_path: Path) -> None:
    w = torch.randn(3, 37, 5)
    a = X * 2.0
    sm = a.softmax(1)
    ref = sm * w
    nodes = [N("a", "mul", ["x", 2.0], a), N("sm", "softmax", ["a"], sm, dim=1), N("res", "mul", ["sm", "w"], ref)]
    g = group(nodes, [V("x", X), V("w", w)], "softmax", anchor="sm")
    check(run(SOFTMAX, g, {"structure": structure, "block_r": 8, "block_i": 2}, tmp_path, X, w), ref)


@needs_expr
def test_fused_softmax_fp16_rounds_like_torch(tmp_path: Path) -> None:
    x = X.half()
    a = x * 3.0  # fp16 intermediate: torch rounds it before the softmax
    ref = fp16_ref(lambda t: t.softmax(-1), a)
    nodes = [N("a", "mul", ["x", 3.0], a), N("res", "softmax", ["a"], ref, dim=-1)]
    check(run(SOFTMAX, group(nodes, [V("x", x)], "softmax", anchor="res"), {}, tmp_path, x), ref)


@needs_expr
@pytest.mark.parametrize("structure", ["one_pass", "split"])
def test_fused_residual_layer_norm_gelu(structure: str, tmp_path: Path) -> None:
    r = torch.randn_like(XN)
    h = XN + r
    ln = F.layer_norm(h, [7], W57[0], B57[0])
    ref = F.gelu(ln)
    nodes = [N("h", "add", ["x", "r"], h), N("ln", "layer_norm", ["h", "w", "b"], ln, normalized_shape=[7]),
             N("res", "gelu", ["ln"], ref, approximate="none")]
    g = group(nodes, [V("x", XN), V("r", r), V("w", W57[0]), V("b", B57[0])], "normalization", anchor="ln")
    check(run(NORM, g, {"structure": structure, "block_l": 4}, tmp_path, XN, r, W57[0], B57[0]), ref)


@needs_expr
def test_fused_batch_norm_prologue_group_norm_epilogue(tmp_path: Path) -> None:
    a = torch.relu(XN)
    ref = F.batch_norm(a, None, None, W6, B6, training=True)
    nodes = [N("a", "relu", ["x"], a), N("res", "batch_norm", ["a", None, None, "w", "b"], ref, training=True)]
    g = group(nodes, [V("x", XN), V("w", W6), V("b", B6)], "normalization", anchor="res")
    check(run(NORM, g, {"split": 2, "block_s": 8, "block_c": 2}, tmp_path, XN, W6, B6), ref)
    gn = F.group_norm(XN, 2, W6, B6)
    ref2 = F.silu(gn)
    nodes = [N("gn", "group_norm", ["x", "w", "b"], gn, num_groups=2), N("res", "silu", ["gn"], ref2)]
    g = group(nodes, [V("x", XN), V("w", W6), V("b", B6)], "normalization", anchor="gn")
    check(run(NORM, g, {"structure": "split", "block_l": 16}, tmp_path, XN, W6, B6), ref2)


@needs_expr
def test_fused_masked_cumsum(tmp_path: Path) -> None:
    # KernelBench 93: torch.cumsum(x * mask, dim=1) with a bool mask
    mask = torch.rand(3, 37, 5) > 0.5
    xm = XS * mask
    ref = xm.cumsum(1)
    nodes = [N("xm", "mul", ["x", "mask"], xm), N("res", "cumsum", ["xm"], ref, dim=1)]
    g = group(nodes, [V("x", XS), V("mask", mask)], "scan", anchor="res")
    check(run(SCAN, g, {"block_r": 8, "block_i": 2}, tmp_path, XS, mask), ref)


@needs_expr
def test_fused_kl_div_log_prologue(tmp_path: Path) -> None:
    # KernelBench 98: kl_div(torch.log(predictions), targets, reduction="batchmean")
    lp = P.log()
    ref = F.kl_div(lp, T, reduction="batchmean")
    nodes = [N("lp", "log", ["p"], lp), N("res", "kl_div", ["lp", "t"], ref, reduction="batchmean")]
    check(run(LOSS, group(nodes, [V("p", P), V("t", T)], "loss", anchor="res"), SMALL, tmp_path, P, T), ref)


@needs_expr
def test_fused_cross_entropy_temperature_and_pool_relu(tmp_path: Path) -> None:
    xs = XC / 2.0
    ref = F.cross_entropy(xs, TG)
    nodes = [N("xs", "div", ["x", 2.0], xs), N("res", "cross_entropy", ["xs", "t", None], ref)]
    g = group(nodes, [V("x", XC), V("t", TG)], "loss", anchor="res")
    check(run(LOSS, g, {"block_r": 8, "block_m": 2}, tmp_path, XC, TG), ref)
    a = torch.relu(X2)
    ref2 = F.max_pool2d(a, 3, 2, 1) + 1.0
    mp = F.max_pool2d(a, 3, 2, 1)
    nodes = [N("a", "relu", ["x"], a), N("mp", "max_pool2d", ["a"], mp, kernel_size=3, stride=2, padding=1),
             N("res", "add", ["mp", 1.0], ref2)]
    check(run(POOL, group(nodes, [V("x", X2)], "pooling", anchor="mp"), {}, tmp_path, X2), ref2)


# ---------------------------------------------------------------------------------------------
# strictness: what a template cannot compute exactly it must not match
# ---------------------------------------------------------------------------------------------

def _declined() -> list[tuple[Any, GroupSpec]]:
    xi = torch.randint(0, 5, (3, 37, 5))
    s = X.sum(1)
    cases: list[tuple[Any, GroupSpec]] = [
        (BASIC, single("sum", {"x": xi}, xi.sum(1), dim=1)),  # integer input
        (BASIC, single("sum", {"x": X.double()}, X.double().sum(1), dim=1)),  # float64
        (BASIC, single("sum", {"x": X}, X.sum((0, 2)), dim=[0, 2])),  # non-contiguous dims
        (BASIC, single("max", {"x": X, "y": X}, torch.maximum(X, X))),  # elementwise max
        (BASIC, single("max", {"x": X}, X.amax(1), args=[1])),  # (values, indices) without getitem
        (BASIC, single("norm", {"x": X}, X.sum(1), p="nuc", dim=1)),
        (BASIC, single("mean", {"x": X}, X.mean(1, keepdim=True), dim=1)),  # shape disagrees
        (SOFTMAX, single("softmax", {"x": X}, X.softmax(1), kind="softmax")),  # implicit dim
        (SOFTMAX, single("log_softmax", {"x": X}, X, kind="softmax", dim=[0, 1])),
        (NORM, single("layer_norm", {"x": XN}, XN, kind="normalization", normalized_shape=[7],
                      elementwise_affine=True)),  # the module has a weight the codegen did not pass
        (NORM, single("layer_norm", {"x": XN}, XN, kind="normalization", normalized_shape=[5])),
        (NORM, single("batch_norm", {"x": XN, "rm": W6, "rv": B6}, XN, ["x", "rm", "rv"],
                      kind="normalization", training=True, momentum=None)),
        (NORM, single("batch_norm", {"x": XN}, XN, kind="normalization", training=False)),
        (NORM, single("instance_norm", {"x": XN, "rm": W6, "rv": B6}, XN, ["x", "rm", "rv"], kind="normalization")),
        (NORM, single("group_norm", {"x": XN}, XN, kind="normalization", num_groups=4)),  # 6 % 4
        (SCAN, single("cumsum", {"x": xi}, xi.cumsum(1), kind="scan", dim=1)),
        (SCAN, single("cummax", {"x": X}, X, kind="scan", dim=1)),
        (POOL, single("max_pool2d", {"x": X2}, F.max_pool2d(X2, 3, 2, ceil_mode=True), kind="pooling",
                      kernel_size=3, stride=2, ceil_mode=True)),
        (POOL, single("max_pool2d", {"x": X2}, F.max_pool2d(X2, 3), kind="pooling", kernel_size=3,
                      return_indices=True)),
        (LOSS, single("cross_entropy", {"x": XC, "t": TG, "w": torch.ones(37)}, F.cross_entropy(XC, TG),
                      ["x", "t", "w"], kind="loss")),
        (LOSS, single("cross_entropy", {"x": XC, "t": XC.softmax(1)}, F.cross_entropy(XC, XC.softmax(1)),
                      kind="loss")),  # probability targets
        (LOSS, single("mse_loss", {"x": A, "y": B}, F.mse_loss(A, B), kind="loss", size_average=True)),
        (LOSS, single("huber_loss", {"x": A, "y": B, "w": A}, F.mse_loss(A, B), ["x", "y", "w"], kind="loss")),
        (PAIR, single("pairwise_distance", {"x": A, "y": B}, F.pairwise_distance(A, B), kind="loss",
                      p="inf")),
    ]
    # two anchors in one group; a non-elementwise node in the prologue; a full-shape epilogue
    sm = s.softmax(0)
    cases.append((BASIC, group([N("s", "sum", ["x"], s, dim=1), N("res", "softmax", ["s"], sm, dim=0)],
                               [V("x", X)])))
    fl = X.flip(1)
    cases.append((BASIC, group([N("f", "flip", ["x"], fl, dims=[1]), N("res", "sum", ["f"], s, dim=1)],
                               [V("x", X)])))
    nrm = X.norm(dim=1, keepdim=True)
    q = X / nrm
    cases.append((BASIC, group([N("n", "norm", ["x"], nrm, p=2, dim=1, keepdim=True),
                                N("res", "div", ["x", "n"], q)], [V("x", X)], anchor="n")))
    return cases


@pytest.mark.parametrize("template,g", _declined(), ids=lambda v: getattr(v, "name", None) or
                         "+".join(n.op for n in v.nodes))
def test_templates_decline_what_they_cannot_compute(template: Any, g: GroupSpec) -> None:
    assert not template.match(g)


def test_registry_and_config_surface() -> None:
    from agents.expert.registry import load_templates

    names = {t.name for t in load_templates()}
    assert {"reduce_basic", "reduce_softmax", "reduce_norm", "reduce_scan", "reduce_loss",
            "reduce_pairwise", "reduce_pool"} <= names
    g = single("softmax", {"x": X}, X.softmax(1), kind="softmax", dim=1)
    assert "one_pass" in SOFTMAX.tuning_space(g)["structure"]
    assert SOFTMAX.default_config(g, "cuda")["structure"] == "one_pass"
    long_row = torch.empty(2, 393216)
    g2 = single("softmax", {"x": long_row}, long_row, kind="softmax", dim=1)
    assert SOFTMAX.default_config(g2, "cuda")["structure"] == "online"


def test_two_plans_share_one_module(tmp_path: Path) -> None:
    """Every module-level name is prefixed by the launcher: two groups can be pasted together."""
    g1 = single("sum", {"x": X}, X.sum(1), dim=1)
    g2 = single("amax", {"x": X}, X.amax(-1), dim=-1)
    body = BASIC.render(g1, {}, "first").source + "\n" + BASIC.render(g2, SMALL, "second").source
    src = HEADER + helper_source(body) + "\n" + body  # the launchers' host helpers, as codegen adds them
    path = tmp_path / "both.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("both", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    check(mod.first(X), X.sum(1))
    check(mod.second(X), X.amax(-1))


def test_group_names_cannot_shadow_launcher_locals(tmp_path: Path) -> None:
    names = {"out": X, "shape": torch.randn(5)}
    s = X.sum(1)
    ref = s + names["shape"]
    if expr_module() is None:
        pytest.skip("needs expr.py for the epilogue")
    nodes = [N("O", "sum", ["out"], s, dim=1), N("M", "add", ["O", "shape"], ref)]
    check(run(BASIC, group(nodes, [V(k, v) for k, v in names.items()], anchor="O"), SMALL, tmp_path,
              *names.values()), ref)
