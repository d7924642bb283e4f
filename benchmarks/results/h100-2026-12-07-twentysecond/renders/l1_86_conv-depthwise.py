# EGG expert candidate for 86_conv_depthwise_separable_2D.py (agents.expert: loop-level IR + templates, no LLM)
# structure: torch keeps aten.convolution; pointwise kernel over 268435456 elements writing 1 output(s)
# variant: conv-depthwise: depthwise convolutions as unrolled stencils in fp32 (each output its channel's window times its taps), their bias and the ops after them in the same kernel
#   _egg_poi0_convolution_1_in: XBLOCK=1024 num_warps=4 EVICT_STREAM='evict_first' EVICT_REUSE=''
# principles: algorithm-structure/conv-keep-cudnn-fuse-around, algorithm-structure/conv-depthwise-stencil, algorithm-structure/fuse-elementwise-chain, parallel-mapping/flat-index-for-elementwise, tiling/power-of-two-blocks-with-masks, memory/eviction-hints, parallel-mapping/fill-the-machine-in-waves
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "XBLOCK": 1024, "num_warps": 4}, "kernel": "_egg_poi0_convolution_1_in", "template": "pointwise"}], "shape_set": "default", "specialised": ["default"], "variant": "conv-depthwise", "version": 2}


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
    Performs a depthwise-separable 2D convolution operation.

    Args:
        in_channels (int): Number of channels in the input tensor.
        out_channels (int): Number of channels produced by the convolution.
        kernel_size (int): Size of the convolution kernel.
        stride (int, optional): Stride of the convolution. Defaults to 1.
        padding (int, optional): Padding applied to the input. Defaults to 0.
        dilation (int, optional): Spacing between kernel elements. Defaults to 1.
        bias (bool, optional): If `True`, adds a learnable bias to the output. Defaults to `False`.
    """
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1, bias: bool = False):
        super(Model, self).__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding, dilation=dilation, groups=in_channels, bias=bias)
        self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)
        
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Performs the depthwise-separable 2D convolution.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: Output tensor of shape (batch_size, out_channels, height_out, width_out).
        """
        x = self.depthwise(x)
        x = self.pointwise(x)
        return x

# Test code
batch_size = 16
in_channels = 64
out_channels = 128
kernel_size = 3
width = 512
height = 512
stride = 1
padding = 1
dilation = 1


# ---- kernels ----


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_poi0_convolution_1_in(p_depthwise_weight_ptr, x_ptr, convolution_1_in_ptr, XBLOCK: tl.constexpr):
    """pointwise: convolution_1_in"""
    xnumel = 268435456
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)
    i1 = ((xindex) // 512) % 512
    tmp2 = (i1 - 1)
    tmp3 = (tmp2 >= 0)
    i4 = (xindex) % 512
    tmp5 = (i4 - 1)
    tmp6 = (tmp5 >= 0)
    tmp7 = (tmp3 & tmp6)
    tmp8 = tl.load(x_ptr + (xindex - 513), tmp7, other=0.0)
    i9 = ((xindex) // 262144) % 64
    tmp10 = tl.load(p_depthwise_weight_ptr + (9*i9))
    tmp11 = (tmp8 * tmp10)
    tmp12 = tl.load(x_ptr + (xindex - 512), tmp3, other=0.0)
    tmp13 = tl.load(p_depthwise_weight_ptr + (9*i9 + 1))
    tmp14 = (tmp12 * tmp13)
    tmp15 = (tmp11 + tmp14)
    tmp16 = (i4 + 1)
    tmp17 = (tmp16 < 512)
    tmp18 = (tmp3 & tmp17)
    tmp19 = tl.load(x_ptr + (xindex - 511), tmp18, other=0.0)
    tmp20 = tl.load(p_depthwise_weight_ptr + (9*i9 + 2))
    tmp21 = (tmp19 * tmp20)
    tmp22 = (tmp15 + tmp21)
    tmp23 = tl.load(x_ptr + (xindex - 1), tmp6, other=0.0)
    tmp24 = tl.load(p_depthwise_weight_ptr + (9*i9 + 3))
    tmp25 = (tmp23 * tmp24)
    tmp26 = (tmp22 + tmp25)
    tmp27 = tl.load(x_ptr + (xindex))
    tmp28 = tl.load(p_depthwise_weight_ptr + (9*i9 + 4))
    tmp29 = (tmp27 * tmp28)
    tmp30 = (tmp26 + tmp29)
    tmp31 = tl.load(x_ptr + (xindex + 1), tmp17, other=0.0)
    tmp32 = tl.load(p_depthwise_weight_ptr + (9*i9 + 5))
    tmp33 = (tmp31 * tmp32)
    tmp34 = (tmp30 + tmp33)
    tmp35 = (i1 + 1)
    tmp36 = (tmp35 < 512)
    tmp37 = (tmp36 & tmp6)
    tmp38 = tl.load(x_ptr + (xindex + 511), tmp37, other=0.0)
    tmp39 = tl.load(p_depthwise_weight_ptr + (9*i9 + 6))
    tmp40 = (tmp38 * tmp39)
    tmp41 = (tmp34 + tmp40)
    tmp42 = tl.load(x_ptr + (xindex + 512), tmp36, other=0.0)
    tmp43 = tl.load(p_depthwise_weight_ptr + (9*i9 + 7))
    tmp44 = (tmp42 * tmp43)
    tmp45 = (tmp41 + tmp44)
    tmp46 = (tmp36 & tmp17)
    tmp47 = tl.load(x_ptr + (xindex + 513), tmp46, other=0.0)
    tmp48 = tl.load(p_depthwise_weight_ptr + (9*i9 + 8))
    tmp49 = (tmp47 * tmp48)
    tmp50 = (tmp45 + tmp49)
    tl.store(convolution_1_in_ptr + (xindex), tmp50.to(tl.float32))


_egg_poi0_convolution_1_in_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi0_convolution_1_in_launch(p_depthwise_weight, x):
    """pointwise: convolution_1_in"""
    global _egg_poi0_convolution_1_in_launch_k0
    convolution_1_in = torch.empty_strided((16, 64, 512, 512), (16777216, 262144, 512, 1), dtype=torch.float32, device=p_depthwise_weight.device)
    if _egg_poi0_convolution_1_in_launch_k0 is not None and _egg_poi0_convolution_1_in_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(p_depthwise_weight, x, convolution_1_in):
        _egg_poi0_convolution_1_in_launch_k0[1][(262144, 1, 1)](p_depthwise_weight, x, convolution_1_in, 1024)
    elif p_depthwise_weight.device.type == "cuda" and _egg_aligned(p_depthwise_weight, x, convolution_1_in):
        _egg_poi0_convolution_1_in_launch_k0 = (torch.cuda.current_device(), _egg_poi0_convolution_1_in[(262144,)](
            p_depthwise_weight, x, convolution_1_in,
            XBLOCK=1024, num_warps=4,
        ))
    else:
        _egg_poi0_convolution_1_in[(262144,)](
            p_depthwise_weight, x, convolution_1_in,
            XBLOCK=1024, num_warps=4,
        )
    return (convolution_1_in,)


# ---- the candidate ----


class ModelNew(Model):
    """depthwise convolutions as unrolled stencils in fp32 (each output its channel's window times its taps), their bias and the ops after them in the same kernel: 1 Triton kernel launch(es) per call"""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int=1, padding: int=0, dilation: int=1, bias: bool=False):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, bias)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        self._egg_owners = (self.get_submodule('depthwise'), self.get_submodule('pointwise'))

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((16, 64, 512, 512), torch.float32, )."""
    owners = self._egg_owners
    p_depthwise_weight = owners[0].weight
    p_pointwise_weight = owners[1].weight
    x = inputs[0]
    if (x.shape != (16, 64, 512, 512) or x.dtype != torch.float32):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((x.shape, x.dtype)))
    if x.stride() != (16777216, 262144, 512, 1):
        x = torch.empty_strided((16, 64, 512, 512), (16777216, 262144, 512, 1), dtype=x.dtype, device=x.device).copy_(x)
    _dev = x.device
    convolution_1_in, = _egg_poi0_convolution_1_in_launch(p_depthwise_weight, x)
    convolution_1 = torch.ops.aten.convolution.default(convolution_1_in, p_pointwise_weight, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    if convolution_1.stride() != (33554432, 262144, 512, 1):
        convolution_1 = torch.empty_strided((16, 128, 512, 512), (33554432, 262144, 512, 1), dtype=convolution_1.dtype, device=convolution_1.device).copy_(convolution_1)
    return convolution_1
