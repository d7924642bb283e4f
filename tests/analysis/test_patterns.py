"""Patterns are found by structure, in every usual spelling of each family."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from egg.analysis import analyze_problem
from egg.analysis.models import PatternMatch
from egg.capture import capture_problem

ProblemWriter = Callable[..., Path]  # the write_problem fixture (tests/conftest.py)

X = "[torch.randn(4, 32)]"
X16 = "[torch.randn(4, 32).half()]"
WEIGHT = "self.weight = nn.Parameter(torch.rand(32) + 0.5)"
AFFINE = WEIGHT + "\nself.bias = nn.Parameter(torch.randn(32))"

# family: {spelling: (forward, init, inputs)}
SPELLINGS: dict[str, dict[str, tuple[str, str, str]]] = {
    "rms_norm": {
        "rsqrt_mean_pow": ("x: return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))", WEIGHT, X),
        "div_sqrt_mul": ("x: return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * self.weight", WEIGHT, X),
        "pow_minus_half": ("x: return x * (x.pow(2).mean(-1, keepdim=True) + 1e-6) ** -0.5 * self.weight", WEIGHT, X),
        "sum_over_n": ("x: return x * torch.rsqrt((x * x).sum(-1, keepdim=True) / 32 + 1e-6) * self.weight", WEIGHT, X),
        "functional": ("x: return F.rms_norm(x, (32,), self.weight, eps=1e-6)", WEIGHT, X),
        "fp16_upcast": (
            """x:
            h = x.float()
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
            return self.weight * h.to(x.dtype)
            """,
            "self.weight = nn.Parameter(torch.ones(32).half())", X16,
        ),
        "fp16_no_upcast": (
            "x: return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)",
            "self.weight = nn.Parameter(torch.ones(32).half())", X16,
        ),
        "fp16_pow_minus_half": (
            "x: return x * (x.pow(2).mean(-1, keepdim=True) + 1e-6) ** -0.5", "", X16,
        ),
    },
    "layer_norm": {
        "module": ("x: return self.norm(x)", "self.norm = nn.LayerNorm(32)", X),
        "functional": ("x: return F.layer_norm(x, (32,), self.weight, self.bias, 1e-6)", AFFINE, X),
        "by_hand_var": (
            """x:
            mu = x.mean(-1, keepdim=True)
            return (x - mu) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-6) * self.weight + self.bias
            """, AFFINE, X,
        ),
        "by_hand_centred_square": (
            """x:
            xc = x - x.mean(-1, keepdim=True)
            return xc * torch.rsqrt((xc * xc).mean(-1, keepdim=True) + 1e-6) * self.weight + self.bias
            """, AFFINE, X,
        ),
        "fp16_module": ("x: return self.norm(x)", "self.norm = nn.LayerNorm(32).half()", X16),
    },
    "group_norm": {
        "module": ("x: return self.norm(x)", "self.norm = nn.GroupNorm(4, 8)", "[torch.randn(2, 8, 5, 5)]"),
        "functional": ("x: return F.group_norm(x, 2)", "", "[torch.randn(2, 8, 5, 5)]"),
    },
    "batch_norm": {
        "training": ("x: return self.bn(x)", "self.bn = nn.BatchNorm2d(8)", "[torch.randn(2, 8, 5, 5)]"),
        "eval": ("x: return self.bn(x)", "self.bn = nn.BatchNorm2d(8).eval()", "[torch.randn(2, 8, 5, 5)]"),
        "1d_functional_eval": (
            "x: return F.batch_norm(x, self.mean, self.var, training=False)",
            "self.register_buffer('mean', torch.zeros(8))\nself.register_buffer('var', torch.ones(8))",
            "[torch.randn(4, 8)]",
        ),
    },
    "softmax": {
        "functional": ("x: return F.softmax(x, dim=-1)", "", X),
        "method_dtype": ("x: return x.softmax(-1, dtype=torch.float32)", "", X16),
        "by_hand": ("x: e = torch.exp(x - x.amax(-1, keepdim=True))\nreturn e / e.sum(-1, keepdim=True)", "", X),
        "by_hand_max_values": (
            "x: e = (x - torch.max(x, dim=1, keepdim=True)[0]).exp()\nreturn e / e.sum(dim=1, keepdim=True)", "", X,
        ),
        "unstable": ("x: return torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)", "", X),
        "reciprocal": ("x: e = torch.exp(x - x.amax(-1, keepdim=True))\nreturn e * (1.0 / e.sum(-1, keepdim=True))", "", X),
    },
    "log_softmax": {
        "functional": ("x: return F.log_softmax(x, dim=-1)", "", X),
        "by_hand": (
            "x: s = x - x.max(-1, keepdim=True).values\nreturn s - s.exp().sum(-1, keepdim=True).log()", "", X,
        ),
    },
    "logsumexp": {
        "torch": ("x: return torch.logsumexp(x, dim=-1)", "", X),
        "by_hand": (
            "x: m = x.amax(-1, keepdim=True)\nreturn m + torch.log(torch.exp(x - m).sum(-1, keepdim=True))", "", X,
        ),
        "unstable": ("x: return x.exp().sum(-1).log()", "", X),
    },
    "cross_entropy": {
        "functional": ("x, t: return F.cross_entropy(x, t)", "", "[torch.randn(4, 32), torch.randint(0, 32, (4,))]"),
        "module_ignore": (
            "x, t: return self.loss(x, t)", "self.loss = nn.CrossEntropyLoss(ignore_index=-100)",
            "[torch.randn(4, 32), torch.randint(0, 32, (4,))]",
        ),
        "nll_of_log_softmax": (
            "x, t: return F.nll_loss(F.log_softmax(x, -1), t)", "",
            "[torch.randn(4, 32), torch.randint(0, 32, (4,))]",
        ),
        "logsumexp_minus_gather": (
            "x, t: return (torch.logsumexp(x, -1) - x.gather(1, t[:, None]).squeeze(1)).mean()", "",
            "[torch.randn(4, 32), torch.randint(0, 32, (4,))]",
        ),
    },
    "gelu": {
        "exact": ("x: return F.gelu(x)", "", X),
        "tanh": ("x: return F.gelu(x, approximate='tanh')", "", X),
        "erf_by_hand": ("x: return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))", "", X),
        "tanh_by_hand_pow": (
            "x: return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))",
            "", X,
        ),
        "tanh_by_hand_cube": (
            "x: return x * 0.5 * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))", "", X,
        ),
        "quick": ("x: return x * torch.sigmoid(1.702 * x)", "", X),
    },
    "gated_mlp": {
        "swiglu_linears": (
            "x: return self.down(F.silu(self.gate(x)) * self.up(x))",
            "self.gate = nn.Linear(32, 64, bias=False)\nself.up = nn.Linear(32, 64, bias=False)\n"
            "self.down = nn.Linear(64, 32, bias=False)", X,
        ),
        "fused_gate_up": (
            "x: g, u = self.gate_up(x).chunk(2, dim=-1)\nreturn self.down(g * torch.sigmoid(g) * u)",
            "self.gate_up = nn.Linear(32, 128, bias=False)\nself.down = nn.Linear(64, 32, bias=False)", X,
        ),
        "geglu": (
            "x: return F.gelu(self.gate(x), approximate='tanh') * self.up(x)",
            "self.gate = nn.Linear(32, 64)\nself.up = nn.Linear(32, 64)", X,
        ),
        "split_input": ("x: a, b = x.chunk(2, -1)\nreturn F.silu(a) * b", "", X),
    },
    "rotary": {
        "rotate_half_chunk": (
            """q, cos, sin:
            x1, x2 = q.chunk(2, dim=-1)
            return q * cos + torch.cat((-x2, x1), dim=-1) * sin
            """, "", "[torch.randn(2, 4, 6, 16), torch.randn(6, 16), torch.randn(6, 16)]",
        ),
        "rotate_half_slices": (
            """q, cos, sin:
            half = q.shape[-1] // 2
            return (q * cos) + (torch.cat((-q[..., half:], q[..., :half]), dim=-1) * sin)
            """, "", "[torch.randn(2, 6, 4, 16), torch.randn(6, 1, 16), torch.randn(6, 1, 16)]",
        ),
        "halves_concatenated": (
            """q, cos, sin:
            x1, x2 = q[..., :8], q[..., 8:]
            return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
            """, "", "[torch.randn(2, 4, 6, 16), torch.randn(6, 8), torch.randn(6, 8)]",
        ),
        "interleaved_stack": (
            """q, cos, sin:
            x1, x2 = q[..., ::2], q[..., 1::2]
            return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
            """, "", "[torch.randn(2, 6, 4, 16), torch.randn(6, 1, 8), torch.randn(6, 1, 8)]",
        ),
        "rotate_every_two": (
            """q, cos, sin:
            rotated = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).flatten(-2)
            return q * cos + rotated * sin
            """, "", "[torch.randn(2, 6, 4, 16), torch.randn(6, 1, 16), torch.randn(6, 1, 16)]",
        ),
        "complex": (
            """q, freqs:
            qc = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
            return torch.view_as_real(qc * freqs).flatten(3).type_as(q)
            """, "", "[torch.randn(2, 6, 4, 16), torch.polar(torch.ones(6, 1, 8), torch.randn(6, 1, 8))]",
        ),
    },
    "attention": {
        "sdpa": (
            "q, k, v: return F.scaled_dot_product_attention(q, k, v, is_causal=True)", "",
            "[torch.randn(1, 2, 8, 16)] * 3",
        ),
        "by_hand": (
            "q, k, v: return torch.softmax(q @ k.transpose(-2, -1) / 4.0, dim=-1) @ v", "",
            "[torch.randn(1, 2, 8, 16)] * 3",
        ),
        "by_hand_masked": (
            """q, k, v:
            s = (q @ k.transpose(-2, -1)) * 0.25
            mask = torch.ones(8, 8, dtype=torch.bool).tril()
            return s.masked_fill(~mask, float('-inf')).softmax(-1) @ v
            """, "", "[torch.randn(1, 2, 8, 16)] * 3",
        ),
    },
    "weight_only_linear": {
        "linear_scaled_weight": (
            "x: return F.linear(x, self.w.to(x.dtype) * self.s.unsqueeze(1))",
            "self.register_buffer('w', torch.randint(-127, 127, (24, 32), dtype=torch.int8))\n"
            "self.register_buffer('s', torch.rand(24))", X,
        ),
        "matmul_transposed": (
            "x: return x @ (self.w.to(torch.float32) * self.s[:, None]).t()",
            "self.register_buffer('w', torch.randint(-127, 127, (24, 32), dtype=torch.int8))\n"
            "self.register_buffer('s', torch.rand(24))", X,
        ),
        "zero_point": (
            "x: return x @ ((self.w.float() - self.z[:, None]) * self.s[:, None]).t()",
            "self.register_buffer('w', torch.randint(0, 255, (24, 32), dtype=torch.uint8))\n"
            "self.register_buffer('s', torch.rand(24))\nself.register_buffer('z', torch.full((24,), 128.0))", X,
        ),
        "scale_after": (
            "x: return (x @ self.w.float().t()) * self.s",
            "self.register_buffer('w', torch.randint(-127, 127, (24, 32), dtype=torch.int8))\n"
            "self.register_buffer('s', torch.rand(24))", X,
        ),
    },
}
CASES = [(family, spelling) for family, spellings in SPELLINGS.items() for spelling in spellings]


def _patterns(write_problem: ProblemWriter, family: str, spelling: str) -> list[PatternMatch]:
    forward, init, inputs = SPELLINGS[family][spelling]
    path = write_problem(forward, init=init, inputs=inputs, constants="import math")
    return analyze_problem(path).patterns


@pytest.mark.parametrize(("family", "spelling"), CASES, ids=[f"{f}-{s}" for f, s in CASES])
def test_family_found_in_every_spelling(write_problem: ProblemWriter, family: str, spelling: str) -> None:
    found = [p for p in _patterns(write_problem, family, spelling) if p.family == family]
    assert found, f"no {family} in {spelling}"
    assert all(p.nodes for p in found)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS["rms_norm"]))
def test_rms_norm_parameters(write_problem: ProblemWriter, spelling: str) -> None:
    (match,) = [p for p in _patterns(write_problem, "rms_norm", spelling) if p.family == "rms_norm"]
    assert match.params["eps"] == pytest.approx(1e-6)
    assert match.params["dims"] == [1]
    assert match.params["weight"] == (None if spelling == "fp16_pow_minus_half" else "weight")
    assert not [p for p in _patterns(write_problem, "rms_norm", spelling) if p.family == "layer_norm"]


def test_upcast_is_a_parameter_not_a_different_pattern(write_problem: ProblemWriter) -> None:
    (upcast,) = [p for p in _patterns(write_problem, "rms_norm", "fp16_upcast") if p.family == "rms_norm"]
    (plain,) = [p for p in _patterns(write_problem, "rms_norm", "fp16_no_upcast") if p.family == "rms_norm"]
    assert (upcast.params["input_dtype"], upcast.params["compute_dtype"]) == ("float16", "float32")
    assert (plain.params["input_dtype"], plain.params["compute_dtype"]) == ("float16", "float16")


def test_norm_families_are_told_apart_by_their_dims(write_problem: ProblemWriter) -> None:
    (layer,) = [p for p in _patterns(write_problem, "layer_norm", "module") if p.family == "layer_norm"]
    assert (layer.params["weight"], layer.params["bias"]) == ("norm.weight", "norm.bias")
    (group,) = [p for p in _patterns(write_problem, "group_norm", "module") if p.family == "group_norm"]
    assert group.params["dims"] == [2, 3]
    (batch,) = [p for p in _patterns(write_problem, "batch_norm", "eval") if p.family == "batch_norm"]
    assert batch.params["training"] is False
    (training,) = [p for p in _patterns(write_problem, "batch_norm", "training") if p.family == "batch_norm"]
    assert 0 in training.params["dims"]


def test_softmax_stability_and_dims(write_problem: ProblemWriter) -> None:
    (stable,) = [p for p in _patterns(write_problem, "softmax", "by_hand") if p.family == "softmax"]
    (unstable,) = [p for p in _patterns(write_problem, "softmax", "unstable") if p.family == "softmax"]
    assert (stable.params["stable"], unstable.params["stable"]) == (True, False)
    assert stable.params["dims"] == [1]


def test_cross_entropy_reads_its_target_and_ignore_index(write_problem: ProblemWriter) -> None:
    (loss,) = [p for p in _patterns(write_problem, "cross_entropy", "module_ignore") if p.family == "cross_entropy"]
    assert (loss.params["target"], loss.params["ignore_index"]) == ("t", -100)


@pytest.mark.parametrize(
    ("spelling", "layout"),
    [("rotate_half_chunk", "half"), ("rotate_half_slices", "half"), ("halves_concatenated", "half"),
     ("interleaved_stack", "interleaved"), ("rotate_every_two", "interleaved"), ("complex", "complex")],
)
def test_rotary_layouts(write_problem: ProblemWriter, spelling: str, layout: str) -> None:
    (rotary,) = [p for p in _patterns(write_problem, "rotary", spelling) if p.family == "rotary"]
    assert rotary.params["layout"] == layout


def test_gelu_approximations(write_problem: ProblemWriter) -> None:
    kinds = {
        spelling: [p for p in _patterns(write_problem, "gelu", spelling) if p.family == "gelu"][0].params["approximate"]
        for spelling in SPELLINGS["gelu"]
    }
    assert kinds == {
        "exact": "none", "tanh": "tanh", "erf_by_hand": "none", "tanh_by_hand_pow": "tanh",
        "tanh_by_hand_cube": "tanh", "quick": "sigmoid",
    }


def test_silu_is_not_a_gelu(write_problem: ProblemWriter) -> None:
    path = write_problem("x: return x * torch.sigmoid(x)", inputs=X)
    assert not [p for p in analyze_problem(path).patterns if p.family == "gelu"]


def test_gated_mlp_parameters(write_problem: ProblemWriter) -> None:
    (fused,) = [p for p in _patterns(write_problem, "gated_mlp", "fused_gate_up") if p.family == "gated_mlp"]
    assert fused.params == {"activation": "silu", "projections": "halves", "down_projection": True}
    (geglu,) = [p for p in _patterns(write_problem, "gated_mlp", "geglu") if p.family == "gated_mlp"]
    assert (geglu.params["activation"], geglu.params["projections"]) == ("gelu", "matmuls")


def test_weight_only_linear_parameters(write_problem: ProblemWriter) -> None:
    (linear,) = [p for p in _patterns(write_problem, "weight_only_linear", "zero_point")
                 if p.family == "weight_only_linear"]
    assert (linear.params["weight"], linear.params["weight_dtype"]) == ("w", "uint8")
    assert (linear.params["scale"], linear.params["zero_point"]) == ("s", "z")
    assert linear.params["transposed"] is True


def test_plain_programs_have_no_patterns(write_problem: ProblemWriter) -> None:
    path = write_problem("x, y: return torch.relu(x + y) * 2.0", inputs="[torch.randn(4, 8), torch.randn(4, 8)]")
    assert analyze_problem(path).patterns == []
    linear = write_problem("x: return self.lin(x)", init="self.lin = nn.Linear(8, 4)", inputs="[torch.randn(2, 8)]",
                           name="linear")
    assert analyze_problem(linear).patterns == []


def test_pattern_nodes_are_graph_nodes_in_order(write_problem: ProblemWriter) -> None:
    forward, init, inputs = SPELLINGS["layer_norm"]["by_hand_var"]
    path = write_problem(forward, init=init, inputs=inputs)
    order = [n.name for n in capture_problem(path).gm.graph.nodes]
    for match in analyze_problem(path).patterns:
        positions = [order.index(name) for name in match.nodes]
        assert positions == sorted(positions)
