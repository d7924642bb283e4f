"""Every shipped workload and fixture problem captures as one canonical graph that computes like eager."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from egg.capture import capture_problem
from egg.problem import inspect_problem
from capture_helpers import (
    FIXTURE_PROBLEMS,
    REPO,
    WORKLOADS,
    assert_canonical,
    assert_computes_like_eager,
    real_problem,
)

PROBLEMS = WORKLOADS + FIXTURE_PROBLEMS


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_production_shapes_capture_canonically_on_fake_tensors(path: Path) -> None:
    captured = capture_problem(path)  # production sizes: only fake tensors make this cheap
    assert captured.method == "export" and captured.source_graphs == 1
    assert_canonical(captured)
    assert not [n for n in captured.notes if "real tensors" in n or "outside" in n], captured.notes
    assert captured.outputs, "a problem returns something"


# add_relu_huge is add_relu's graph at 2 GiB a tensor, kept for the judge's device-memory peak on the GPU; on real
# tensors here it took 83 s and ~10 GB of a 24 GB CI machine to check nothing add_relu does not (2026-12-04)
REAL_TENSOR_PROBLEMS = [p for p in PROBLEMS if p.stem != "add_relu_huge"]


@pytest.mark.parametrize("path", REAL_TENSOR_PROBLEMS, ids=lambda p: p.stem)
def test_small_shapes_compute_like_eager(path: Path) -> None:
    shape_set = "small" if "small" in inspect_problem(path).shape_sets else "default"
    assert_computes_like_eager(path, shape_set)


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.stem)
def test_graph_inputs_resolve_on_the_model(path: Path) -> None:
    captured = capture_problem(path, "small")
    model, inputs = real_problem(path, "small")
    state = dict(model.named_parameters()) | dict(model.named_buffers())
    for graph_input in captured.inputs:
        if graph_input.kind == "user_input":
            value = inputs[graph_input.target]
        elif graph_input.kind == "constant" and graph_input.value is not None:
            value = graph_input.value
        else:
            value = state[graph_input.target]
            assert (graph_input.kind == "parameter") == (graph_input.target in dict(model.named_parameters()))
        assert isinstance(value, torch.Tensor)
        assert (tuple(value.shape), value.dtype) == (graph_input.shape, graph_input.dtype), graph_input.name


def _ops(path: Path) -> set[str]:
    return set(capture_problem(path, "small").op_counts())


def test_views_stay_views() -> None:
    workloads = REPO / "workloads"
    # rotate_half: two slices and a cat, not copies
    assert {"aten.slice.Tensor", "aten.cat.default"} <= _ops(workloads / "rotary_embedding.py")
    # chunk(2) becomes two slices (PyTorch's own split decomposition would use as_strided)
    swiglu = _ops(workloads / "swiglu.py")
    assert "aten.slice.Tensor" in swiglu
    assert not swiglu & {"aten.split_with_sizes.default", "aten.as_strided.default"}
    # F.linear's weight transpose is a permute feeding mm
    assert {"aten.permute.default", "aten.mm.default"} <= _ops(workloads / "int8_weight_only_linear.py")
    # k.transpose(-2, -1) and the batched matmul's broadcast stay index maps
    attention = _ops(workloads / "short_seq_attention.py")
    assert {"aten.permute.default", "aten.view.default", "aten.bmm.default"} <= attention


def test_composites_are_decomposed_to_reductions() -> None:
    workloads = REPO / "workloads"
    layer_norm = _ops(workloads / "residual_layer_norm.py")
    assert {"aten.var.correction", "aten.mean.dim", "aten.rsqrt.default"} <= layer_norm
    assert "aten.native_layer_norm.default" not in layer_norm
    softmax = _ops(workloads / "causal_softmax.py")
    assert {"aten.amax.default", "aten.exp.default", "aten.sum.dim_IntList"} <= softmax
    assert "aten._softmax.default" not in softmax
    cross_entropy = _ops(workloads / "cross_entropy_large_vocab.py")
    assert "aten.gather.default" in cross_entropy and "aten._log_softmax.default" not in cross_entropy


def test_kernelbench_sized_weights_capture_without_allocating(tmp_path: Path) -> None:
    """A 16384 x 16384 fp32 Linear (1 GiB of weight) captures with the process's peak memory
    barely moving: nothing of that size is ever allocated."""
    problem = tmp_path / "big_linear.py"
    problem.write_text(textwrap.dedent('''
        import torch
        import torch.nn as nn
        N = 16384
        class Model(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.linear = nn.Linear(n, n)
            def forward(self, x):
                return torch.relu(self.linear(x))
        def get_inputs():
            return [torch.randn(4096, N)]
        def get_init_inputs():
            return [N]
    '''))
    script = textwrap.dedent(f'''
        import json, resource, time
        from egg.capture import capture_problem
        capture_problem({str(REPO / "tests/fixtures/problems/add_relu.py")!r}, "small")  # warm up
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        captured = capture_problem({str(problem)!r})
        print(json.dumps({{
            "grew_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before,
            "seconds": time.perf_counter() - start,
            "weight": [list(g.shape) for g in captured.inputs if g.target == "linear.weight"],
            "notes": captured.notes,
        }}))
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["weight"] == [[16384, 16384]]
    assert result["grew_kib"] < 256 * 1024, result  # the weight alone would be 1 GiB
    assert not result["notes"], result["notes"]
