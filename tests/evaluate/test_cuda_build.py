"""CUDA candidates: nvcc compile checks on CPU (real nvcc, real torch headers) and the load_inline
interceptor. nvcc runs take tens of seconds each (torch's headers are large), so the heavy ones
are module fixtures shared by several tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import torch.utils.cpp_extension as cpp

from egg.evaluate.cuda_build import CompileCheck, CudaUnavailable, intercept_load_inline, nvcc_compile_check
from egg.problem import import_file

HONEST_CUDA = Path(__file__).parents[1] / "fixtures" / "candidates" / "honest" / "cuda_load_inline.py"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (CUDA toolkit)")

PLAIN_KERNELS = """\
template <typename T>
__global__ void scale(const T* x, T* out, T a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i];
}
template __global__ void scale<float>(const float*, float*, float, int);
template __global__ void scale<double>(const double*, double*, double, int);

__global__ void add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
"""

# Line 7 assigns a tensor to a float* (a type error in host code); line 3 uses an undeclared name.
# load_inline prepends torch/types.h & co, so this also proves lines are the candidate's own.
BAD_KERNEL = """\
__global__ void relu_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(x[i], zero);
}

torch::Tensor relu(torch::Tensor x) {
    float* p = x;
    auto out = torch::empty_like(x);
    relu_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.numel());
    return out;
}
"""


@pytest.fixture(scope="module")
def honest_on_cpu(tmp_path_factory: pytest.TempPathFactory) -> tuple[CudaUnavailable, list[dict], Path]:
    """Import the honest load_inline candidate with no GPU: nvcc checks it, then it is refused."""
    root = tmp_path_factory.mktemp("builds")
    with pytest.raises(CudaUnavailable) as info:
        with intercept_load_inline(root, on_gpu=False) as calls:
            import_file(HONEST_CUDA, "egg_test_cuda")
    return info.value, list(calls), root


@pytest.fixture(scope="module")
def bad_check(tmp_path_factory: pytest.TempPathFactory) -> CompileCheck:
    return nvcc_compile_check(BAD_KERNEL, tmp_path_factory.mktemp("bad"))


@needs_nvcc
def test_honest_cuda_candidate_compiles_and_reports_registers(honest_on_cpu) -> None:
    exc, _, _ = honest_on_cpu
    check = exc.check
    assert check.ok, check.errors
    assert check.errors == []
    assert check.registers.get("add_relu_kernel", 0) > 0, check.registers
    assert check.spills == {"add_relu_kernel": 0}
    assert "-arch=sm_90a" in check.command and "-cubin" in check.command and check.seconds > 0
    assert "compiled with nvcc (sm_90a) but cannot run without a GPU" in exc.reason()


@needs_nvcc
def test_intercept_records_the_call_with_a_unique_name_and_build_dir(honest_on_cpu) -> None:
    exc, calls, root = honest_on_cpu
    (record,) = calls
    assert record["function"] == "load_inline" and record["name"] == "add_relu"
    assert record["unique_name"].startswith("add_relu_") and record["unique_name"] != "add_relu"
    assert Path(record["build_directory"]).parent == root and Path(record["build_directory"]).is_dir()
    assert record["functions"] == ["add_relu_cuda"]
    # the candidate's own sources, without the headers load_inline prepends
    assert record["cuda_sources"][0].lstrip().startswith("#include <torch/extension.h>")
    assert record["check"]["ok"] is True and record["check"] == exc.check.model_dump()
    assert cpp.load_inline.__module__ == "torch.utils.cpp_extension"
    assert cpp.load.__module__ == "torch.utils.cpp_extension"


@needs_nvcc
def test_compile_error_reports_the_line_in_the_cuda_source(bad_check: CompileCheck) -> None:
    assert not bad_check.ok
    assert any(e.startswith("cuda_sources line 3: error:") and "zero" in e for e in bad_check.errors), bad_check.errors
    assert any(e.startswith("cuda_sources line 7: error:") for e in bad_check.errors), bad_check.errors
    assert all("\n" not in e for e in bad_check.errors)


@needs_nvcc
def test_plain_kernels_report_registers_per_kernel_with_readable_names(tmp_path: Path) -> None:
    check = nvcc_compile_check(PLAIN_KERNELS, tmp_path, implicit_headers=False)
    assert check.ok, check.errors
    assert set(check.registers) == {"scale<float>", "scale<double>", "add_one"}, check.registers
    assert all(r > 0 for r in check.registers.values())
    assert check.notes == [] or all("stubs" in n for n in check.notes)


@needs_nvcc
def test_ptxas_resource_errors_are_reported(tmp_path: Path) -> None:
    source = "__global__ void big(float* o) { __shared__ float s[1 << 20]; s[threadIdx.x] = 1; o[0] = s[5]; }\n"
    check = nvcc_compile_check(source, tmp_path, implicit_headers=False)
    assert not check.ok
    assert any(e.startswith("ptxas: error:") and "shared data" in e for e in check.errors), check.errors


@needs_nvcc
def test_intercepted_bad_source_raises_with_the_failed_check(tmp_path: Path) -> None:
    bad = "__global__ void k(float* x) {\n    x[threadIdx.x] = undefined_name;\n}\n"
    with intercept_load_inline(tmp_path, on_gpu=False) as calls:
        with pytest.raises(CudaUnavailable) as info:
            cpp.load_inline(name="bad", cpp_sources="", cuda_sources=[bad], no_implicit_headers=True)
    assert not info.value.check.ok
    assert info.value.check.errors[0].startswith("cuda_sources line 2: error:")
    assert "does not compile with nvcc (sm_90a): cuda_sources line 2" in info.value.reason()
    assert calls[0]["check"]["ok"] is False


@needs_nvcc
def test_nvcc_timeout_is_one_clear_error(tmp_path: Path) -> None:
    check = nvcc_compile_check("#include <torch/extension.h>\n__global__ void k() {}\n", tmp_path, timeout_s=1)
    assert not check.ok and check.errors == ["nvcc timed out after 1s"]
    assert 1 <= check.seconds < 10


def test_missing_nvcc_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-toolkit"))
    check = nvcc_compile_check("__global__ void k() {}", tmp_path)
    assert not check.ok and len(check.errors) == 1 and "nvcc not found" in check.errors[0]


def test_each_distinct_build_gets_its_own_name_and_originals_come_back(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-toolkit"))  # no nvcc: each call fails fast
    original_inline, original_load = cpp.load_inline, cpp.load
    with intercept_load_inline(tmp_path / "builds", on_gpu=False) as calls:
        from torch.utils.cpp_extension import load_inline  # what a candidate imports sees the interceptor

        for source in ("__global__ void a() {}", "__global__ void b() {}", "__global__ void a() {}"):
            with pytest.raises(CudaUnavailable, match="nvcc not found"):
                load_inline("same_name", "", cuda_sources=source)
        assert load_inline is not original_inline
    assert (cpp.load_inline, cpp.load) == (original_inline, original_load)
    names = [c["unique_name"] for c in calls]
    assert names[0] != names[1] and names[0] == names[2]
    assert all(n.startswith("same_name_") for n in names)
    assert all(Path(c["build_directory"]).is_dir() for c in calls)
    assert calls.launch_counts() == {}


def test_intercepted_load_checks_cu_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-toolkit"))
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    with intercept_load_inline(tmp_path / "builds", on_gpu=False) as calls:
        with pytest.raises(CudaUnavailable):
            cpp.load("ext", [str(tmp_path / "k.cu")], extra_cuda_cflags=["-O3", "--use_fast_math", "-gencode=x"])
    assert calls[0]["function"] == "load" and calls[0]["sources"] == [str((tmp_path / "k.cu").resolve())]


@pytest.mark.gpu
def test_intercepted_build_runs_on_gpu_and_counts_calls(tmp_path: Path) -> None:
    with intercept_load_inline(tmp_path, on_gpu=True) as calls:
        module = import_file(HONEST_CUDA, "egg_test_cuda_gpu")
    model = module.ModelNew().cuda()
    x = torch.randn(37, 129, device="cuda")
    y = torch.randn(37, 129, device="cuda")
    out = model(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.relu(x + y))
    assert calls.launch_counts() == {"add_relu.add_relu_cuda": 1}
    model(x, y)
    assert calls.launch_counts() == {"add_relu.add_relu_cuda": 2}
    (record,) = calls
    assert Path(record["build_directory"]).parent == tmp_path
    assert record["unique_name"] != "add_relu" and record["check"] is None
