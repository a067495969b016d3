"""2-D convolution (NCHW, no padding) as an implicit GEMM, the way ntops writes it.

The input is tiled into ``(C, R, S)`` windows, one per output pixel, and the
windows are flattened into the rows of an ``(N * P * Q, C * R * S)`` matrix
that is never materialized; the weight becomes a ``(C * R * S, K)`` matrix and
the output, seen through ``permute``, an ``(N * P * Q, K)`` one. The product
is then an ordinary tiled matmul with fp32 accumulation, plus the bias.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend

#: Convolution stride and dilation (height, width); part of the arrangement.
STRIDE = (2, 1)
DILATION = (1, 1)


def _matmul_arrangement(input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged = other_arranged.tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)

    return input_arranged, other_arranged, output_arranged


def arrangement(
    input,
    weight,
    bias,
    output,
    # Four configs: each takes seconds through the compile check, whose index
    # arithmetic (window offsets from flattened indices) is long.
    BLOCK_SIZE_M=ninetoothed.block_size(lower_bound=32, upper_bound=64),
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=32, upper_bound=64),
    BLOCK_SIZE_K=ninetoothed.block_size(lower_bound=32, upper_bound=32),
):
    block_sizes = (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)

    windows = input.tile(
        (1, *weight.shape[1:]),
        strides=(-1, -1, *STRIDE),
        dilation=(1, 1, *DILATION),
        floor_mode=True,
    )
    windows = windows.squeeze(1)
    windows.dtype = windows.dtype.squeeze(0)
    windows = windows.ravel()
    windows = windows.flatten(end_dim=3).flatten(start_dim=1)

    weight_matrix = weight.flatten(start_dim=1).permute((1, 0))
    bias_matrix = bias.permute((0, 2, 3, 1)).flatten(end_dim=3)
    output_matrix = output.permute((0, 2, 3, 1)).flatten(end_dim=3)

    bias_arranged = bias_matrix.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
    input_arranged, weight_arranged, output_arranged = _matmul_arrangement(
        windows, weight_matrix, output_matrix, *block_sizes
    )

    return input_arranged, weight_arranged, bias_arranged, output_arranged


def application(input, weight, bias, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], weight[k])

    output = accumulator + bias  # noqa: F841


tensors = (Tensor(4, other=0), Tensor(4, other=0), Tensor(4), Tensor(4))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="conv2d"
)


CASES = (
    {"batch": 2, "channels": 3, "height": 13, "width": 11, "filters": 20, "kernel": 3},
    {"batch": 1, "channels": 8, "height": 9, "width": 10, "filters": 33, "kernel": 2},
)

#: ``tl.dot`` multiplies fp32 inputs in tf32 on NVIDIA GPUs (10-bit mantissa).
TOLERANCES = {torch.float32: (5e-2, 1e-2)}


def inputs(
    device,
    dtype=torch.float16,
    batch=2,
    channels=3,
    height=13,
    width=11,
    filters=20,
    kernel=3,
):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((batch, channels, height, width), generator=generator).to(
            device, dtype
        ),
        torch.randn((filters, channels, kernel, kernel), generator=generator).to(
            device, dtype
        ),
        torch.randn((filters,), generator=generator).to(device, dtype),
    )


def launch(kernel, input, weight, bias):
    batch, _, height, width = input.shape
    filters, _, kernel_height, kernel_width = weight.shape
    output_height = (height - DILATION[0] * (kernel_height - 1) - 1) // STRIDE[0] + 1
    output_width = (width - DILATION[1] * (kernel_width - 1) - 1) // STRIDE[1] + 1
    output = torch.empty(
        (batch, filters, output_height, output_width),
        device=input.device,
        dtype=input.dtype,
    )
    # The bias is read through zero strides, once per output element.
    kernel(input, weight, bias.view(1, -1, 1, 1).expand_as(output), output)

    return output


def reference(input, weight, bias):
    return torch.nn.functional.conv2d(
        input.float(), weight.float(), bias.float(), stride=STRIDE, dilation=DILATION
    ).to(input.dtype)
