"""The shipped workloads: valid problems, CPU-sized ``small``/``odd`` sets, references checked
against independent float64 (or ``torch.optim``/``index_copy``) computations, and the CLI."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

import egg.cli.main as cli_main
from egg.errors import EggInputError
from egg.problem import inspect_problem, load_problem_module, select_shape_sets
from egg.tolerance import resolve_tolerances, tolerance_for
from workloads import compulsory_bytes, list_workloads, workload_path, workload_names

CPU_SETS = ("small", "odd")
REQUIRED = {
    "rms_norm", "residual_layer_norm", "swiglu", "rotary_embedding", "causal_softmax",
    "cross_entropy_large_vocab", "adamw_step", "int8_weight_only_linear", "gelu_mlp",
    "topk_sampling_logits", "short_seq_attention", "kv_cache_append", "int4_weight_only_linear",
}
MODEL_NAMES = ("Llama", "GPT", "Mistral", "Qwen", "BERT", "ViT", "Phi", "Falcon")

# --- independent computations: (module, model, inputs, outputs) -> [(expected float64, dtype)] ---

Expected = list[tuple[torch.Tensor, torch.dtype]]


def _d(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(torch.float64)


def _rms_norm(mod, model, inputs, outputs) -> Expected:
    (x,) = inputs
    x64 = _d(x)
    y = x64 / torch.sqrt((x64 * x64).mean(-1, keepdim=True) + mod.EPS) * _d(model.weight)
    return [(y, x.dtype)]


def _residual_layer_norm(mod, model, inputs, outputs) -> Expected:
    x, residual = inputs
    r = _d(x) + _d(residual)
    r_stored = _d(r.to(x.dtype))  # the returned residual is in the activation dtype
    mean = r_stored.mean(-1, keepdim=True)
    var = ((r_stored - mean) ** 2).mean(-1, keepdim=True)
    y = (r_stored - mean) / torch.sqrt(var + mod.EPS) * _d(model.norm.weight) + _d(model.norm.bias)
    return [(y, x.dtype), (r, x.dtype)]


def _silu64(g: torch.Tensor) -> torch.Tensor:
    return g / (1.0 + torch.exp(-g))


def _swiglu(mod, model, inputs, outputs) -> Expected:
    (gate_up,) = inputs
    n = gate_up.shape[-1] // 2
    g, u = _d(gate_up[:, :n]), _d(gate_up[:, n:])
    return [(_silu64(g) * u, gate_up.dtype)]


def _swiglu_mlp(mod, model, inputs, outputs) -> Expected:
    (x,) = inputs
    x64 = _d(x)
    h = _silu64(x64 @ _d(model.gate_proj.weight).T) * (x64 @ _d(model.up_proj.weight).T)
    return [(h @ _d(model.down_proj.weight).T, x.dtype)]


def _rotary_embedding(mod, model, inputs, outputs) -> Expected:
    positions, q, k = inputs
    d = q.shape[-1]
    inv_freq = mod.ROPE_THETA ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.to(torch.float64)[..., None] * inv_freq  # [B, S, D/2]
    rot = torch.polar(torch.ones_like(angle), angle)[:, :, None, :]

    def apply(x: torch.Tensor) -> torch.Tensor:
        x64 = _d(x)
        z = torch.complex(x64[..., : d // 2], x64[..., d // 2 :]) * rot
        return torch.cat((z.real, z.imag), dim=-1)

    return [(apply(q), q.dtype), (apply(k), k.dtype)]


def _causal_softmax(mod, model, inputs, outputs) -> Expected:
    (scores,) = inputs
    s = _d(scores) * mod.HEAD_DIM**-0.5
    n = s.shape[-1]
    future = torch.arange(n)[None, :] > torch.arange(n)[:, None]
    s = torch.where(future, torch.tensor(-math.inf, dtype=torch.float64), s)
    e = torch.exp(s - s.amax(-1, keepdim=True))
    return [(e / e.sum(-1, keepdim=True), scores.dtype)]


def _cross_entropy(mod, model, inputs, outputs) -> Expected:
    logits, targets = inputs
    keep = targets != -100
    logp = torch.log_softmax(_d(logits), dim=-1)
    picked = logp[keep].gather(1, targets[keep].unsqueeze(1)).squeeze(1)
    return [(-picked.mean(), torch.float32)]


def _adamw_step(mod, model, inputs, outputs) -> Expected:
    param, grad, exp_avg, exp_avg_sq, step = inputs
    p = torch.nn.Parameter(param.detach().clone())
    p.grad = grad.detach().clone()
    opt = torch.optim.AdamW(
        [p], lr=mod.LR, betas=(mod.BETA1, mod.BETA2), eps=mod.EPS, weight_decay=mod.WEIGHT_DECAY,
        foreach=False,
    )
    opt.state[p] = {
        "step": step.detach().clone() - 1,  # torch.optim increments before use
        "exp_avg": exp_avg.detach().clone(),
        "exp_avg_sq": exp_avg_sq.detach().clone(),
    }
    opt.step()
    state = opt.state[p]
    return [(_d(p), param.dtype), (_d(state["exp_avg"]), param.dtype), (_d(state["exp_avg_sq"]), param.dtype)]


def _int8_linear(mod, model, inputs, outputs) -> Expected:
    (x,) = inputs
    assert model.weight.dtype == torch.int8 and int(model.weight.abs().max()) <= 127
    w = _d(model.weight) * _d(model.scale)[:, None]
    return [(_d(x) @ w.T, x.dtype)]


def _int4_linear(mod, model, inputs, outputs) -> Expected:
    (x,) = inputs
    packed = model.qweight.to(torch.int64)
    assert model.qweight.dtype == torch.uint8 and packed.shape[1] * 2 == mod.IN_FEATURES
    w = torch.empty(mod.OUT_FEATURES, mod.IN_FEATURES, dtype=torch.float64)
    w[:, 0::2] = (packed % 16 - 8).to(torch.float64)  # even features: the low nibble
    w[:, 1::2] = (packed // 16 - 8).to(torch.float64)
    w = w * _d(model.scales).repeat_interleave(mod.GROUP, dim=1)
    return [(_d(x) @ w.T, x.dtype)]


def _gelu_mlp(mod, model, inputs, outputs) -> Expected:
    (x,) = inputs
    h = _d(x) @ _d(model.fc1.weight).T + _d(model.fc1.bias)
    g = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))
    return [(g @ _d(model.fc2.weight).T + _d(model.fc2.bias), x.dtype)]


def _topk_sampling(mod, model, inputs, outputs) -> Expected:
    logits, temperatures = inputs
    scaled = _d(logits) / _d(temperatures)[:, None]
    threshold = scaled.sort(dim=-1, descending=True).values[:, mod.TOP_K - 1 : mod.TOP_K]
    masked = torch.where(scaled >= threshold, scaled, torch.tensor(-math.inf, dtype=torch.float64))
    (probs,) = outputs
    assert ((probs > 0).sum(-1) >= mod.TOP_K).all()
    return [(torch.softmax(masked, dim=-1), torch.float32)]


def _short_seq_attention(mod, model, inputs, outputs) -> Expected:
    q, k, v = inputs
    s = _d(q) @ _d(k).transpose(-2, -1) / math.sqrt(q.shape[-1])
    return [(torch.softmax(s, dim=-1) @ _d(v), q.dtype)]


def _kv_cache_append(mod, model, inputs, outputs) -> Expected:
    k_cache, v_cache, k_new, v_new, seqlens = inputs
    b, s, h, d = k_cache.shape
    n = k_new.shape[1]
    flat = (torch.arange(b)[:, None] * s + seqlens[:, None] + torch.arange(n)).reshape(-1)

    def append(cache: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
        return cache.reshape(b * s, h, d).index_copy(0, flat, new.reshape(b * n, h, d)).reshape(b, s, h, d)

    return [(_d(append(k_cache, k_new)), k_cache.dtype), (_d(append(v_cache, v_new)), v_cache.dtype)]


CHECKS: dict[str, Callable[..., Expected]] = {
    "rms_norm": _rms_norm,
    "residual_layer_norm": _residual_layer_norm,
    "swiglu": _swiglu,
    "swiglu_mlp": _swiglu_mlp,
    "rotary_embedding": _rotary_embedding,
    "causal_softmax": _causal_softmax,
    "cross_entropy_large_vocab": _cross_entropy,
    "adamw_step": _adamw_step,
    "int8_weight_only_linear": _int8_linear,
    "int4_weight_only_linear": _int4_linear,
    "gelu_mlp": _gelu_mlp,
    "topk_sampling_logits": _topk_sampling,
    "short_seq_attention": _short_seq_attention,
    "kv_cache_append": _kv_cache_append,
}

# --- the catalogue ---


def test_required_workloads_present_and_all_checked() -> None:
    names = set(workload_names())
    assert REQUIRED <= names
    assert names == set(CHECKS), "every workload needs an independent check in this module"


@pytest.mark.parametrize("name", workload_names())
def test_workload_metadata(name: str) -> None:
    info = inspect_problem(workload_path(name))
    doc = info.docstring or ""
    for section in ("Where it occurs:", "Sizes that matter:", "Bytes moved at production:"):
        assert section in doc, f"{name}: docstring lacks {section!r}"
    where = doc.split("Where it occurs:")[1].split("\n\n")[0]
    assert any(m in where for m in MODEL_NAMES), f"{name}: 'Where it occurs' names no model"
    assert "small" in info.shape_sets and "odd" in info.shape_sets
    assert select_shape_sets(info, "all")[0] == "default"
    dtype = info.constants["DTYPE"]
    assert isinstance(getattr(torch, dtype), torch.dtype)
    # small runs in the Triton CPU interpreter, whose bf16 is not faithful
    assert {**info.constants, **info.shape_sets["small"]}["DTYPE"] == "float32"
    odd_ints = [v for v in info.shape_sets["odd"].values() if isinstance(v, int) and not isinstance(v, bool)]
    assert any(v % 8 for v in odd_ints), f"{name}: the odd set has no size that is not a multiple of 8"


@pytest.mark.parametrize("name", workload_names())
def test_production_traffic_matches_docstring(name: str) -> None:
    moved = compulsory_bytes(name)
    assert 1e6 <= moved <= 4e8, f"{name}: {moved / 1e6:.1f} MB at production"
    doc = inspect_problem(workload_path(name)).docstring or ""
    paragraph = doc.split("Bytes moved at production:")[1].split("\n\n")[0]
    stated = float(re.search(r"=\s*([\d.]+)\s*MB", paragraph).group(1)) * 1e6
    assert abs(stated - moved) / moved < 0.01, f"{name}: docstring says {stated / 1e6} MB, inputs+state+outputs are {moved / 1e6:.1f} MB"


# --- running the references on the CPU-sized sets ---


def _tensors(obj) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    return []


@pytest.mark.parametrize("shape_set", CPU_SETS)
@pytest.mark.parametrize("name", workload_names())
def test_reference_on_cpu_sets(name: str, shape_set: str) -> None:
    path = workload_path(name)
    info = inspect_problem(path)
    mod = load_problem_module(path, info.shape_sets[shape_set])
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs())
    torch.manual_seed(1)
    inputs = mod.get_inputs()
    assert all(t.device.type == "cpu" for t in _tensors(inputs))
    before = [t.clone() for t in _tensors(inputs)]

    start = time.perf_counter()
    with torch.no_grad():
        out = model(*inputs)
    elapsed = time.perf_counter() - start
    outputs = list(out) if isinstance(out, (tuple, list)) else [out]

    for t, saved in zip(_tensors(inputs), before):
        assert torch.equal(t, saved), f"{name}: forward mutated an input"
    if shape_set == "small":
        assert elapsed < 1.0, f"{name}: small forward took {elapsed:.2f}s"
        elements = sum(t.numel() for t in _tensors(inputs) + outputs + list(model.parameters()))
        assert elements <= 16384, f"{name}: small set has {elements} elements (too big for the Triton interpreter)"

    tolerances = resolve_tolerances(info.tolerance)
    expected = CHECKS[name](mod, model, inputs, outputs)
    assert len(outputs) == len(expected)
    for i, (got, (want, dtype)) in enumerate(zip(outputs, expected)):
        label = f"{name}[{shape_set}] output {i}"
        assert got.dtype == dtype, f"{label}: dtype {got.dtype}, expected {dtype}"
        assert got.shape == want.shape, f"{label}: shape {tuple(got.shape)}, expected {tuple(want.shape)}"
        assert torch.isfinite(got).all(), f"{label}: not finite"
        tol = tolerance_for(str(dtype).removeprefix("torch."), tolerances)
        g = got.to(torch.float64)
        assert g.abs().max() > 10 * tol.atol, f"{label}: near zero everywhere"
        assert (g.abs() > tol.atol).sum() >= min(16, g.numel()), f"{label}: almost all below atol"
        err = (g - want).abs() - tol.rtol * want.abs()
        assert torch.allclose(g, want, atol=tol.atol, rtol=tol.rtol), (
            f"{label}: max |err| - rtol*|ref| = {err.max().item():.3g} > atol {tol.atol}"
        )


def test_seeded_reference_is_deterministic() -> None:
    path = workload_path("int8_weight_only_linear")
    mod = load_problem_module(path, inspect_problem(path).shape_sets["small"])
    runs = []
    for _ in range(2):
        torch.manual_seed(3)
        model = mod.Model(*mod.get_init_inputs())
        runs.append((model.weight.clone(), model(*mod.get_inputs())))
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])


# --- API and CLI ---


def test_list_workloads_and_paths() -> None:
    infos = {w.name: w for w in list_workloads()}
    rms = infos["rms_norm"]
    assert rms.dtype == "bfloat16" and rms.production["HIDDEN"] == 4096
    assert rms.summary.startswith("RMSNorm") and "\n" not in rms.summary
    assert list(rms.shape_sets)[:3] == ["default", "small", "odd"]
    assert infos["adamw_step"].dtype == "float32"
    assert workload_path("rms_norm.py") == workload_path("rms_norm") == rms.path


def test_workload_path_unknown_is_one_line() -> None:
    with pytest.raises(EggInputError) as exc:
        workload_path("rmsnorm")
    message = str(exc.value)
    assert "\n" not in message and "rmsnorm" in message and "rms_norm" in message
    with pytest.raises(EggInputError):
        workload_path("__init__")


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(cli_main, "COMMANDS", ("workloads",))
    return cli_main.main


def test_cli_list_table(cli, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["workloads", "list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["NAME", "DTYPE", "SHAPE"]
    for name in workload_names():
        row = next(line for line in lines if line.startswith(name + " "))
        assert "small" in row


def test_cli_list_json(cli, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["workloads", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == workload_names()
    ce = next(r for r in rows if r["name"] == "cross_entropy_large_vocab")
    assert ce["production"]["VOCAB"] == 128256 and ce["dtype"] == "bfloat16" and "odd" in ce["shape_sets"]


def test_cli_show_and_errors(cli, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["workloads", "show", "adamw_step"]) == 0
    out = capsys.readouterr().out
    assert "Where it occurs" in out and "small:" in out and "Tolerance" in out
    assert cli(["workloads", "show", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown workload 'nope'" in err
    assert cli(["workloads"]) == 2
    assert "choose an action" in capsys.readouterr().err
