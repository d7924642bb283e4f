"""Reference kernel: sum over the last dim of 1024 x 512 fp32.

Generated, do not edit: the expert codegen's reduction template(s) (agents/expert/templates/), variant fused,
rendered for an H200 with the built-in packs' constants by `python -m agents.expert.reference`.
Structure: sum over 512 x 1024 rows, persistent (rows in registers), with 1 store(s)
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
def _egg_red0_sum(x_ptr, sum_1_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: sum_1"""
    xnumel = 1024
    rnumel = 512
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    # persistent: the whole reduced extent of XBLOCK rows sits in registers, read once
    rindex = tl.arange(0, RBLOCK)[None, :]
    tmp1 = tl.load(x_ptr + (rindex + 512*xindex))
    tmp2 = tl.sum(tmp1, 1)[:, None]
    tl.store(sum_1_ptr + (xindex), tmp2.to(tl.float32))


_egg_red0_sum_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red0_sum_launch(x):
    """reduction: sum_1"""
    global _egg_red0_sum_launch_k0
    sum_1 = torch.empty_strided((1024,), (1,), dtype=torch.float32, device=x.device)
    if _egg_red0_sum_launch_k0 is not None and _egg_red0_sum_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(x, sum_1):
        _egg_red0_sum_launch_k0[1][(512, 1, 1)](x, sum_1, 2, 512)
    elif x.device.type == "cuda" and _egg_aligned(x, sum_1):
        _egg_red0_sum_launch_k0 = (torch.cuda.current_device(), _egg_red0_sum[(512,)](
            x, sum_1,
            XBLOCK=2, RBLOCK=512, num_warps=4,
        ))
    else:
        _egg_red0_sum[(512,)](
            x, sum_1,
            XBLOCK=2, RBLOCK=512, num_warps=4,
        )
    return (sum_1,)
