# %% [markdown]
# # Where does a KernelBench conv + epilogue problem spend its time?
#
# Level 2's conv problems ran at 0.4-0.8x of torch.compile in every sweep. EGG keeps the
# convolution a cuDNN call in NCHW and fuses the ops after it into Triton kernels; Inductor also
# calls cuDNN, but may pick channels-last and fuses the epilogue its own way. This probe splits the
# time of each problem given on the command line:
#
# - eager and torch.compile (default mode) of the whole problem;
# - the convolution alone, as `F.conv*` on contiguous NCHW input, and on channels-last input and
#   weight (the conversion of the input outside the timed region, and inside it);
# - the same with TF32 off for cuDNN, to see what the default flag is worth;
# - the bytes the epilogue must move at least (conv output read once, problem output written
#   once), at 4.3 TB/s.
#
# Every figure is `triton.testing.do_bench` median (L2 flushed by do_bench), PyTorch's default
# flags (matmul TF32 off, cuDNN TF32 on) unless a row says otherwise. Output: one JSON line per
# problem on stdout (`TORCH_LOGS=output_code` puts Inductor's generated code on stderr).
#
#     python benchmarks/conv_probe.py .kb/KernelBench/level2/21_*.py ...     # on the GPU
#
# Not a judge measurement: it says where to spend effort.

# %%
import importlib.util
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from triton.testing import do_bench

ROOFLINE_BPS = 4.3e12


def load(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem.replace("-", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def bench(fn) -> float:
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def first_conv(model: torch.nn.Module) -> torch.nn.Module:
    for m in model.modules():
        if isinstance(m, torch.nn.modules.conv._ConvNd):
            return m
    raise ValueError("no convolution module")


def conv_call(conv: torch.nn.Module):
    """The module's convolution as a plain function of (x, weight)."""
    if isinstance(conv, torch.nn.modules.conv._ConvTransposeNd):
        fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[conv.weight.dim() - 2]
        return lambda x, w: fn(x, w, conv.bias, conv.stride, conv.padding, conv.output_padding, conv.groups,
                               conv.dilation)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[conv.weight.dim() - 2]
    return lambda x, w: fn(x, w, conv.bias, conv.stride, conv.padding, conv.dilation, conv.groups)


# %%
def probe(path: str) -> dict:
    mod = load(path)
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs()).cuda().eval()
    inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in mod.get_inputs()]
    row: dict = {"problem": Path(path).stem}
    with torch.no_grad():
        out = model(*inputs)
        row["eager_ms"] = bench(lambda: model(*inputs))
        torch._dynamo.reset()
        compiled = torch.compile(model)
        compiled(*inputs)
        row["compile_ms"] = bench(lambda: compiled(*inputs))
        conv = first_conv(model)
        call = conv_call(conv)
        x = inputs[0]
        y = call(x, conv.weight)
        row["conv_out_MB"] = round(y.numel() * y.element_size() / 1e6, 1)
        row["conv_nchw_ms"] = bench(lambda: call(x, conv.weight))
        cl = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
        xc, wc = x.contiguous(memory_format=cl), conv.weight.contiguous(memory_format=cl)
        row["conv_cl_ms"] = bench(lambda: call(xc, wc))
        row["conv_cl_with_input_copy_ms"] = bench(lambda: call(x.contiguous(memory_format=cl), wc))
        torch.backends.cudnn.allow_tf32 = False
        row["conv_nchw_no_tf32_ms"] = bench(lambda: call(x, conv.weight))
        torch.backends.cudnn.allow_tf32 = True
        row["out_MB"] = round(out.numel() * out.element_size() / 1e6, 1)
        row["epilogue_floor_ms"] = round((y.numel() * y.element_size() + out.numel() * out.element_size())
                                         / ROOFLINE_BPS * 1e3, 4)
    row = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}
    print(json.dumps(row), flush=True)
    return row


if __name__ == "__main__":
    for p in sys.argv[1:]:
        try:
            probe(p)
        except Exception as exc:  # noqa: BLE001 - one problem's failure must not end the probe
            print(json.dumps({"problem": Path(p).stem, "error": f"{type(exc).__name__}: {exc}"[:300]}), flush=True)
        torch.cuda.empty_cache()
