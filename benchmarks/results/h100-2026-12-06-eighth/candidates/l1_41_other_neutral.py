# EGG expert candidate for 41_Max_Pooling_1D.py (agents.expert: loop-level IR + templates, no LLM)
# structure: max over 8 x 805146624 rows, looped (1 pass(es)), with 1 store(s)
# variant: fused: library ops stay torch calls, the ops around them are fused
#   _egg_red0_max_pool2d_with_indices: PERSISTENT=False XBLOCK=256 RBLOCK=1 num_warps=4 EVICT_STREAM='' EVICT_REUSE=''
# principles: algorithm-structure/fuse-reduction-with-neighbours, tiling/fp32-accumulators, memory/masked-loads-neutral-other, parallel-mapping/reduce-non-contiguous-axis, tiling/one-pass-row-limit
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "", "PERSISTENT": false, "RBLOCK": 1, "XBLOCK": 256, "num_warps": 4}, "kernel": "_egg_red0_max_pool2d_with_indices", "template": "reduction"}], "shape_set": "default", "specialised": ["default"], "variant": "fused", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Max Pooling 1D.
    """
    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1, return_indices: bool = False):
        """
        Initializes the Max Pooling 1D layer.

        Args:
            kernel_size (int): Size of the window to take a max over.
            stride (int, optional): Stride of the window. Defaults to None (same as kernel_size).
            padding (int, optional): Implicit zero padding to be added on both sides. Defaults to 0.
            dilation (int, optional): Spacing between kernel elements. Defaults to 1.
            return_indices (bool, optional): Whether to return the indices of the maximum values. Defaults to False.
        """
        super(Model, self).__init__()
        self.maxpool = nn.MaxPool1d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, return_indices=return_indices)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Max Pooling 1D to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features, sequence_length).

        Returns:
            torch.Tensor: Output tensor with Max Pooling 1D applied, shape (batch_size, num_features, output_sequence_length).
        """
        return self.maxpool(x)

batch_size = 64
features = 192
sequence_length = 65536

kernel_size = 8
stride      = 1
padding     = 4
dilation    = 3            

return_indices = False


# ---- kernels ----


@triton.jit
def _egg_max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)

def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_red0_max_pool2d_with_indices(x_ptr, max_pool2d_with_indices_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: max_pool2d_with_indices"""
    xnumel = 805146624
    rnumel = 8
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    _acc1 = tl.full([XBLOCK, RBLOCK], float("-inf"), tl.float32)
    i2 = (xindex) % 65523
    i7 = (xindex) // 65523
    # pass 1 of 1 over the reduced extent: max_pool2d_with_indices
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        tmp3 = (3*rindex + i2 - 4)
        tmp4 = (tmp3 >= 0)
        tmp5 = (tmp3 < 65536)
        tmp6 = (tmp4 & tmp5)
        tmp8 = tl.load(x_ptr + (3*rindex + i2 + 65536*i7 - 4), tmp6, other=float("-inf"))
        _acc1 = _egg_max_nan(_acc1, tmp8)
    tmp9 = tl.max(_acc1, 1)[:, None]
    tmp10 = tl.sum((_acc1 != _acc1).to(tl.int32), 1)[:, None] > 0
    tmp11 = tl.where(tmp10, float("nan"), tmp9)
    tl.store(max_pool2d_with_indices_ptr + (xindex), tmp11.to(tl.float32))


_egg_red0_max_pool2d_with_indices_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red0_max_pool2d_with_indices_launch(x):
    """reduction: max_pool2d_with_indices"""
    global _egg_red0_max_pool2d_with_indices_launch_k0
    max_pool2d_with_indices = torch.empty_strided((64, 192, 1, 65523), (12580416, 65523, 65523, 1), dtype=torch.float32, device=x.device)
    if _egg_red0_max_pool2d_with_indices_launch_k0 is not None and _egg_red0_max_pool2d_with_indices_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(x, max_pool2d_with_indices):
        _egg_red0_max_pool2d_with_indices_launch_k0[1][(3145104, 1, 1)](x, max_pool2d_with_indices, 256, 1)
    elif x.device.type == "cuda" and _egg_aligned(x, max_pool2d_with_indices):
        _egg_red0_max_pool2d_with_indices_launch_k0 = (torch.cuda.current_device(), _egg_red0_max_pool2d_with_indices[(3145104,)](
            x, max_pool2d_with_indices,
            XBLOCK=256, RBLOCK=1, num_warps=4,
        ))
    else:
        _egg_red0_max_pool2d_with_indices[(3145104,)](
            x, max_pool2d_with_indices,
            XBLOCK=256, RBLOCK=1, num_warps=4,
        )
    return (max_pool2d_with_indices,)


# ---- the candidate ----


class ModelNew(Model):
    """library ops stay torch calls, the ops around them are fused: 1 Triton kernel launch(es) per call"""

    def __init__(self, kernel_size: int, stride: int=None, padding: int=0, dilation: int=1, return_indices: bool=False):
        super().__init__(kernel_size, stride, padding, dilation, return_indices)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        pass

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((64, 192, 65536), torch.float32, )."""
    x = inputs[0]
    if (x.shape != (64, 192, 65536) or x.dtype != torch.float32):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((x.shape, x.dtype)))
    if x.stride() != (12582912, 65536, 1):
        x = torch.empty_strided((64, 192, 65536), (12582912, 65536, 1), dtype=x.dtype, device=x.device).copy_(x)
    _dev = x.device
    max_pool2d_with_indices, = _egg_red0_max_pool2d_with_indices_launch(x)
    return max_pool2d_with_indices.view((64, 192, 65523))
