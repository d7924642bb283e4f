"""Reference kernel: RMSNorm of 256 x 4096 fp16 rows (fp32 statistics, rsqrt).

Generated, do not edit: the expert codegen's reduction template(s) (agents/expert/templates/), variant fused,
rendered for an H200 with the built-in packs' constants by `python -m agents.expert.reference`.
Structure: sum over 4096 x 256 rows, persistent (rows in registers), with 1 store(s)
Principles: algorithm-structure/fuse-reduction-with-neighbours, tiling/fp32-accumulators, memory/masked-loads-neutral-other, tiling/one-pass-row-limit, parallel-mapping/one-row-per-program
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
def _egg_red0_mean_mul(p_w_ptr, x_ptr, mul_1_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: mean, mul_1"""
    xnumel = 256
    rnumel = 4096
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    # persistent: the whole reduced extent of XBLOCK rows sits in registers, read once
    rindex = tl.arange(0, RBLOCK)[None, :]
    tmp1 = tl.load(x_ptr + (rindex + 4096*xindex)).to(tl.float32)
    tmp2 = (tmp1 * tmp1)
    tmp3 = tl.sum(tmp2, 1)[:, None]
    tmp4 = tl.load(p_w_ptr + (rindex)).to(tl.float32)
    tmp5 = (tmp3 / 4096.0)
    tmp6 = (tmp5 + 1e-06)
    tmp7 = tl.rsqrt(tmp6)
    tmp8 = (tmp1 * tmp7)
    tmp9 = tmp8.to(tl.float16).to(tl.float32)
    tmp10 = (tmp4 * tmp9).to(tl.float16).to(tl.float32)
    tl.store(mul_1_ptr + (rindex + 4096*xindex), tmp10.to(tl.float16))


_egg_red0_mean_mul_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red0_mean_mul_launch(p_w, x):
    """reduction: mean, mul_1"""
    global _egg_red0_mean_mul_launch_k0
    mul_1 = torch.empty_strided((256, 4096), (4096, 1), dtype=torch.float16, device=p_w.device)
    if _egg_red0_mean_mul_launch_k0 is not None and _egg_red0_mean_mul_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(p_w, x, mul_1):
        _egg_red0_mean_mul_launch_k0[1][(256, 1, 1)](p_w, x, mul_1, 1, 4096)
    elif p_w.device.type == "cuda" and _egg_aligned(p_w, x, mul_1):
        _egg_red0_mean_mul_launch_k0 = (torch.cuda.current_device(), _egg_red0_mean_mul[(256,)](
            p_w, x, mul_1,
            XBLOCK=1, RBLOCK=4096, num_warps=8,
        ))
    else:
        _egg_red0_mean_mul[(256,)](
            p_w, x, mul_1,
            XBLOCK=1, RBLOCK=4096, num_warps=8,
        )
    return (mul_1,)
