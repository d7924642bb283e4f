"""Reference kernel: softmax over the last dim of 256 x 2048 fp16.

Generated, do not edit: the expert codegen's reduction template(s) (agents/expert/templates/), variant fused,
rendered for an H200 with the built-in packs' constants by `python -m agents.expert.reference`.
Structure: max, sum over 2048 x 256 rows, persistent (rows in registers), with 1 store(s)
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
def _egg_red0_amax_sum__to_copy(x_ptr, _to_copy_1_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: amax, sum_1, _to_copy_1"""
    xnumel = 256
    rnumel = 2048
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    # persistent: the whole reduced extent of XBLOCK rows sits in registers, read once
    rindex = tl.arange(0, RBLOCK)[None, :]
    tmp1 = tl.load(x_ptr + (rindex + 2048*xindex)).to(tl.float32)
    tmp2 = tl.max(tmp1, 1)[:, None]
    tmp3 = tl.sum((tmp1 != tmp1).to(tl.int32), 1)[:, None] > 0
    tmp4 = tl.where(tmp3, float("nan"), tmp2)
    tmp5 = (tmp1 - tmp4)
    tmp6 = tl.exp(tmp5)
    tmp7 = tl.sum(tmp6, 1)[:, None]
    tmp8 = (tmp6 / tmp7)
    tmp9 = tmp8.to(tl.float16).to(tl.float32)
    tl.store(_to_copy_1_ptr + (rindex + 2048*xindex), tmp9.to(tl.float16))


_egg_red0_amax_sum__to_copy_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red0_amax_sum__to_copy_launch(x):
    """reduction: amax, sum_1, _to_copy_1"""
    global _egg_red0_amax_sum__to_copy_launch_k0
    _to_copy_1 = torch.empty_strided((256, 2048), (2048, 1), dtype=torch.float16, device=x.device)
    if _egg_red0_amax_sum__to_copy_launch_k0 is not None and _egg_red0_amax_sum__to_copy_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(x, _to_copy_1):
        _egg_red0_amax_sum__to_copy_launch_k0[1][(256, 1, 1)](x, _to_copy_1, 1, 2048)
    elif x.device.type == "cuda" and _egg_aligned(x, _to_copy_1):
        _egg_red0_amax_sum__to_copy_launch_k0 = (torch.cuda.current_device(), _egg_red0_amax_sum__to_copy[(256,)](
            x, _to_copy_1,
            XBLOCK=1, RBLOCK=2048, num_warps=8,
        ))
    else:
        _egg_red0_amax_sum__to_copy[(256,)](
            x, _to_copy_1,
            XBLOCK=1, RBLOCK=2048, num_warps=8,
        )
    return (_to_copy_1,)
