"""Reference kernel: relu(2 * x + 0.5 * y + bias) over 64 x 1024 fp16.

Generated, do not edit: the expert codegen's pointwise template(s) (agents/expert/templates/), variant fused,
rendered for an H200 with the built-in packs' constants by `python -m agents.expert.reference`.
Structure: pointwise kernel over 65536 elements writing 1 output(s)
Principles: algorithm-structure/fuse-elementwise-chain, parallel-mapping/flat-index-for-elementwise, tiling/power-of-two-blocks-with-masks, parallel-mapping/fill-the-machine-in-waves
"""

import torch
import triton
import triton.language as tl


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_poi0_relu(p_b_ptr, x_ptr, y_ptr, relu_ptr, XBLOCK: tl.constexpr):
    """pointwise: relu"""
    xnumel = 65536
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)
    tmp1 = tl.load(x_ptr + (xindex)).to(tl.float32)
    tmp2 = (tmp1 * 2.0).to(tl.float16).to(tl.float32)
    tmp3 = tl.load(y_ptr + (xindex)).to(tl.float32)
    tmp4 = (tmp3 * 0.5).to(tl.float16).to(tl.float32)
    tmp5 = (tmp2 + tmp4).to(tl.float16).to(tl.float32)
    i6 = (xindex) % 1024
    tmp7 = tl.load(p_b_ptr + (i6)).to(tl.float32)
    tmp8 = (tmp5 + tmp7).to(tl.float16).to(tl.float32)
    tmp9 = (tl.where(tmp8 < 0.0, 0.0, tmp8)).to(tl.float16).to(tl.float32)
    tl.store(relu_ptr + (xindex), tmp9.to(tl.float16))


_egg_poi0_relu_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi0_relu_launch(p_b, x, y):
    """pointwise: relu"""
    global _egg_poi0_relu_launch_k0
    relu = torch.empty_strided((64, 1024), (1024, 1), dtype=torch.float16, device=p_b.device)
    if _egg_poi0_relu_launch_k0 is not None and _egg_poi0_relu_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(p_b, x, y, relu):
        _egg_poi0_relu_launch_k0[1][(512, 1, 1)](p_b, x, y, relu, 128)
    elif p_b.device.type == "cuda" and _egg_aligned(p_b, x, y, relu):
        _egg_poi0_relu_launch_k0 = (torch.cuda.current_device(), _egg_poi0_relu[(512,)](
            p_b, x, y, relu,
            XBLOCK=128, num_warps=4,
        ))
    else:
        _egg_poi0_relu[(512,)](
            p_b, x, y, relu,
            XBLOCK=128, num_warps=4,
        )
    return (relu,)
