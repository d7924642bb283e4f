# EGG expert candidate for 86_conv_depthwise_separable_2D.py (agents.expert: loop-level IR + templates, no LLM)
# structure: pointwise kernel over 268435456 elements writing 1 output(s), tiled 32 x 64 over a transposed access; pointwise kernel over 8192 elements writing 1 output(s); Triton convolution, tf32 fp32 dot
# variant: conv-gemm: convolutions as Triton implicit GEMMs (the input gathered in the tile loads), their bias and the ops after them in the epilogue, TF32 as cuDNN under PyTorch's default
#   _egg_poi0_convolution_1_x_tf: XBLOCK=64 num_warps=4 EVICT_STREAM='evict_first' EVICT_REUSE='' YBLOCK=32
#   _egg_poi1_convolution_1_w_tf: XBLOCK=128 num_warps=4 EVICT_STREAM='' EVICT_REUSE=''
#   _egg_mat2_convolution: BLOCK_M=128 BLOCK_N=128 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3 SPLIT_K=1
# principles: algorithm-structure/conv-implicit-gemm, algorithm-structure/fuse-elementwise-chain, parallel-mapping/flat-index-for-elementwise, tiling/power-of-two-blocks-with-masks, memory/eviction-hints, memory/transpose-via-tiles, parallel-mapping/fill-the-machine-in-waves, parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, tiling/fp32-dot-input-precision
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "XBLOCK": 64, "YBLOCK": 32, "num_warps": 4}, "kernel": "_egg_poi0_convolution_1_x_tf", "template": "pointwise"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "", "XBLOCK": 128, "num_warps": 4}, "kernel": "_egg_poi1_convolution_1_w_tf", "template": "pointwise"}, {"config": {"BLOCK_K": 32, "BLOCK_M": 128, "BLOCK_N": 128, "GROUP_M": 8, "SPLIT_K": 1, "num_stages": 3, "num_warps": 4}, "kernel": "_egg_mat2_convolution", "template": "matmul"}], "shape_set": "default", "specialised": ["default"], "variant": "conv-gemm", "version": 2}


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


@triton.jit
def _egg_round_tf32(x):
    # fp32 rounded to TF32's 10-bit mantissa, to nearest (ties away), as cuDNN rounds (cvt.rna). A
    # tl.dot with input_precision="tf32" hands fp32 to the tensor cores, which drop the low 13 bits:
    # truncation, biased, 2.6x the mean error of a rounded TF32 convolution on the H200 (2026-12-03).
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)

def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_poi0_convolution_1_x_tf(p_depthwise_weight_ptr, x_ptr, convolution_1_x_tf32_ptr, XBLOCK: tl.constexpr, YBLOCK: tl.constexpr):
    """pointwise: convolution_1_x_tf32"""
    xnumel = 268435456
    # a [YBLOCK, XBLOCK] tile of the flat index yindex * 64 + xinner: the transposed access
    # walks yindex with stride 1, the contiguous ones walk xinner, so both use whole sectors
    pid = tl.program_id(0)
    yindex = (pid // 1) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    xinner = (pid % 1) * XBLOCK + tl.arange(0, XBLOCK)[None, :]
    i1 = ((yindex) // 512) % 512
    tmp2 = (i1 - 1)
    tmp3 = (tmp2 >= 0)
    i4 = (yindex) % 512
    tmp5 = (i4 - 1)
    tmp6 = (tmp5 >= 0)
    tmp7 = (tmp3 & tmp6)
    i8 = (yindex) % 262144
    i9 = (yindex) // 262144
    tmp10 = tl.load(x_ptr + (262144*xinner + i8 + 16777216*i9 - 513), tmp7, other=0.0)
    tmp11 = tl.load(p_depthwise_weight_ptr + (9*xinner))
    tmp12 = (tmp10 * tmp11)
    tmp13 = tl.load(x_ptr + (262144*xinner + i8 + 16777216*i9 - 512), tmp3, other=0.0)
    tmp14 = tl.load(p_depthwise_weight_ptr + (9*xinner + 1))
    tmp15 = (tmp13 * tmp14)
    tmp16 = (tmp12 + tmp15)
    tmp17 = (i4 + 1)
    tmp18 = (tmp17 < 512)
    tmp19 = (tmp3 & tmp18)
    tmp20 = tl.load(x_ptr + (262144*xinner + i8 + 16777216*i9 - 511), tmp19, other=0.0)
    tmp21 = tl.load(p_depthwise_weight_ptr + (9*xinner + 2))
    tmp22 = (tmp20 * tmp21)
    tmp23 = (tmp16 + tmp22)
    tmp24 = tl.load(x_ptr + (262144*xinner + i8 + 16777216*i9 - 1), tmp6, other=0.0)
    tmp25 = tl.load(p_depthwise_weight_ptr + (9*xinner + 3))
    tmp26 = (tmp24 * tmp25)
    tmp27 = (tmp23 + tmp26)
    tmp28 = tl.load(x_ptr + (262144*xinner + i8 + 16777216*i9))
    tmp29 = tl.load(p_depthwise_weight_ptr + (9*xinner + 4))
    tmp30 = (tmp28 * tmp29)
    tmp31 = (tmp27 + tmp30)
    tmp32 = tl.load(x_ptr + (262144*xinner + i8 + 16777216*i9 + 1), tmp18, other=0.0)
    tmp33 = tl.load(p_depthwise_weight_ptr + (9*xinner + 5))
    tmp34 = (tmp32 * tmp33)
    tmp35 = (tmp31 + tmp34)
    tmp36 = (i1 + 1)
    tmp37 = (tmp36 < 512)
    tmp38 = (tmp37 & tmp6)
    tmp39 = tl.load(x_ptr + (262144*xinner + i8 + 16777216*i9 + 511), tmp38, other=0.0)
    tmp40 = tl.load(p_depthwise_weight_ptr + (9*xinner + 6))
    tmp41 = (tmp39 * tmp40)
    tmp42 = (tmp35 + tmp41)
    tmp43 = tl.load(x_ptr + (262144*xinner + i8 + 16777216*i9 + 512), tmp37, other=0.0)
    tmp44 = tl.load(p_depthwise_weight_ptr + (9*xinner + 7))
    tmp45 = (tmp43 * tmp44)
    tmp46 = (tmp42 + tmp45)
    tmp47 = (tmp37 & tmp18)
    tmp48 = tl.load(x_ptr + (262144*xinner + i8 + 16777216*i9 + 513), tmp47, other=0.0)
    tmp49 = tl.load(p_depthwise_weight_ptr + (9*xinner + 8))
    tmp50 = (tmp48 * tmp49)
    tmp51 = (tmp46 + tmp50)
    tmp52 = _egg_round_tf32(tmp51)
    tl.store(convolution_1_x_tf32_ptr + (xinner + 64*yindex), tmp52.to(tl.float32))


_egg_poi0_convolution_1_x_tf_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi0_convolution_1_x_tf_launch(p_depthwise_weight, x):
    """pointwise: convolution_1_x_tf32"""
    global _egg_poi0_convolution_1_x_tf_launch_k0
    convolution_1_x_tf32 = torch.empty_strided((16, 64, 512, 512), (16777216, 1, 32768, 64), dtype=torch.float32, device=p_depthwise_weight.device)
    if _egg_poi0_convolution_1_x_tf_launch_k0 is not None and _egg_poi0_convolution_1_x_tf_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(p_depthwise_weight, x, convolution_1_x_tf32):
        _egg_poi0_convolution_1_x_tf_launch_k0[1][(131072, 1, 1)](p_depthwise_weight, x, convolution_1_x_tf32, 64, 32)
    elif p_depthwise_weight.device.type == "cuda" and _egg_aligned(p_depthwise_weight, x, convolution_1_x_tf32):
        _egg_poi0_convolution_1_x_tf_launch_k0 = (torch.cuda.current_device(), _egg_poi0_convolution_1_x_tf[(131072,)](
            p_depthwise_weight, x, convolution_1_x_tf32,
            XBLOCK=64, YBLOCK=32, num_warps=4,
        ))
    else:
        _egg_poi0_convolution_1_x_tf[(131072,)](
            p_depthwise_weight, x, convolution_1_x_tf32,
            XBLOCK=64, YBLOCK=32, num_warps=4,
        )
    return (convolution_1_x_tf32,)

@triton.jit
def _egg_poi1_convolution_1_w_tf(p_pointwise_weight_ptr, convolution_1_w_tf32_ptr, XBLOCK: tl.constexpr):
    """pointwise: convolution_1_w_tf32"""
    xnumel = 8192
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)
    tmp1 = tl.load(p_pointwise_weight_ptr + (xindex))
    tmp2 = _egg_round_tf32(tmp1)
    tl.store(convolution_1_w_tf32_ptr + (xindex), tmp2.to(tl.float32))


_egg_poi1_convolution_1_w_tf_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi1_convolution_1_w_tf_launch(p_pointwise_weight):
    """pointwise: convolution_1_w_tf32"""
    global _egg_poi1_convolution_1_w_tf_launch_k0
    convolution_1_w_tf32 = torch.empty_strided((128, 64, 1, 1), (64, 1, 64, 64), dtype=torch.float32, device=p_pointwise_weight.device)
    if _egg_poi1_convolution_1_w_tf_launch_k0 is not None and _egg_poi1_convolution_1_w_tf_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(p_pointwise_weight, convolution_1_w_tf32):
        _egg_poi1_convolution_1_w_tf_launch_k0[1][(64, 1, 1)](p_pointwise_weight, convolution_1_w_tf32, 128)
    elif p_pointwise_weight.device.type == "cuda" and _egg_aligned(p_pointwise_weight, convolution_1_w_tf32):
        _egg_poi1_convolution_1_w_tf_launch_k0 = (torch.cuda.current_device(), _egg_poi1_convolution_1_w_tf[(64,)](
            p_pointwise_weight, convolution_1_w_tf32,
            XBLOCK=128, num_warps=4,
        ))
    else:
        _egg_poi1_convolution_1_w_tf[(64,)](
            p_pointwise_weight, convolution_1_w_tf32,
            XBLOCK=128, num_warps=4,
        )
    return (convolution_1_w_tf32,)

@triton.jit
def _egg_mat2_convolution(convolution_1_w_tf32_ptr, convolution_1_x_tf32_ptr, convolution_1_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """matmul: convolution_1: aten.convolution [16 x 128 x 64] @ [64 x 262144]"""
    M = 128
    N = 262144
    K = 64
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # the batch index folds into the grid: num_pid_m * num_pid_n tiles per batch entry
    pid_b = pid // (num_pid_m * num_pid_n)
    pid = pid % (num_pid_m * num_pid_n)
    # GROUP_M swizzle: programs that run together reuse the same B tiles from L2
    group_id = pid // (GROUP_M * num_pid_n)
    first_m = group_id * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_pid_n)) % group_rows
    pid_n = (pid % (GROUP_M * num_pid_n)) // group_rows
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None])
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # the operand tiles are computed from their index maps (views, prologues) at every K step
    for k0 in range(0, K, BLOCK_K):
        rka = k0 + tl.arange(0, BLOCK_K)[None, :]
        rkb = k0 + tl.arange(0, BLOCK_K)[:, None]
        a_tmp1 = tl.load(convolution_1_w_tf32_ptr + (rka + 64*rm))
        a = a_tmp1.to(tl.float32)
        b_tmp1 = tl.load(convolution_1_x_tf32_ptr + (rkb + 64*rn + 16777216*pid_b))
        b = b_tmp1.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision="tf32")
    e_tmp1 = acc
    tl.store(convolution_1_ptr + (262144*rm + rn + 33554432*pid_b), e_tmp1.to(tl.float32))


_egg_mat2_convolution_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat2_convolution_launch(convolution_1_w_tf32, convolution_1_x_tf32):
    """matmul: convolution_1: aten.convolution [16 x 128 x 64] @ [64 x 262144]"""
    global _egg_mat2_convolution_launch_k0
    convolution_1 = torch.empty_strided((16, 128, 262144), (33554432, 262144, 1), dtype=torch.float32, device=convolution_1_w_tf32.device)
    if _egg_mat2_convolution_launch_k0 is not None and _egg_mat2_convolution_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(convolution_1_w_tf32, convolution_1_x_tf32, convolution_1):
        _egg_mat2_convolution_launch_k0[1][(32768, 1, 1)](convolution_1_w_tf32, convolution_1_x_tf32, convolution_1, 128, 128, 32, 8)
    elif convolution_1_w_tf32.device.type == "cuda" and _egg_aligned(convolution_1_w_tf32, convolution_1_x_tf32, convolution_1):
        _egg_mat2_convolution_launch_k0 = (torch.cuda.current_device(), _egg_mat2_convolution[(32768,)](
            convolution_1_w_tf32, convolution_1_x_tf32, convolution_1,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3,
        ))
    else:
        _egg_mat2_convolution[(32768,)](
            convolution_1_w_tf32, convolution_1_x_tf32, convolution_1,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3,
        )
    return (convolution_1,)


# ---- the candidate ----


class ModelNew(Model):
    """convolutions as Triton implicit GEMMs (the input gathered in the tile loads), their bias and the ops after them in the epilogue, TF32 as cuDNN under PyTorch's default: 3 Triton kernel launch(es) per call"""

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
    convolution_1_x_tf32, = _egg_poi0_convolution_1_x_tf_launch(p_depthwise_weight, x)
    convolution_1_w_tf32, = _egg_poi1_convolution_1_w_tf_launch(p_pointwise_weight)
    convolution_1, = _egg_mat2_convolution_launch(convolution_1_w_tf32, convolution_1_x_tf32)
    return convolution_1.view((16, 128, 512, 512))
