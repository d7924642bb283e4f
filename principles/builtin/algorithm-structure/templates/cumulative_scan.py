"""Reference kernel: cumsum over the last dim of 64 x 1024 fp32.

Generated, do not edit: the expert codegen's scan template(s) (agents/expert/templates/), variant fused,
rendered for an H200 with the built-in packs' constants by `python -m agents.expert.reference`.
Structure: cumsum over 1024 x 64 rows in chunks of 1024
Principles: algorithm-structure/scan-with-associative-scan, algorithm-structure/fuse-reduction-with-neighbours, tiling/fp32-accumulators
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
def _egg_sca0_cumsum(x_ptr, cumsum_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """scan: cumsum"""
    xnumel = 64
    rnumel = 1024
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    _carry1 = tl.full([XBLOCK, 1], 0, tl.float32)
    # the scanned dim in RBLOCK chunks: scan inside the chunk, carry the running total across
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        tmp2 = tl.load(x_ptr + (rindex + 1024*xindex))
        tmp3 = tl.cumsum(tmp2, 1) + _carry1
        _carry1 = _carry1 + tl.sum(tmp2, 1)[:, None]
        tl.store(cumsum_ptr + (rindex + 1024*xindex), tmp3.to(tl.float32))


_egg_sca0_cumsum_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_sca0_cumsum_launch(x):
    """scan: cumsum"""
    global _egg_sca0_cumsum_launch_k0
    cumsum = torch.empty_strided((64, 1024), (1024, 1), dtype=torch.float32, device=x.device)
    if _egg_sca0_cumsum_launch_k0 is not None and _egg_sca0_cumsum_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(x, cumsum):
        _egg_sca0_cumsum_launch_k0[1][(32, 1, 1)](x, cumsum, 2, 1024)
    elif x.device.type == "cuda" and _egg_aligned(x, cumsum):
        _egg_sca0_cumsum_launch_k0 = (torch.cuda.current_device(), _egg_sca0_cumsum[(32,)](
            x, cumsum,
            XBLOCK=2, RBLOCK=1024, num_warps=4,
        ))
    else:
        _egg_sca0_cumsum[(32,)](
            x, cumsum,
            XBLOCK=2, RBLOCK=1024, num_warps=4,
        )
    return (cumsum,)
