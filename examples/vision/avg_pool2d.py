"""2-D average pooling (NCHW) with a fixed window and a fixed block, as operator libraries write it.

``torch.nn.functional.avg_pool2d`` with a 3 x 3 window, stride 2, padding 1
and ``count_include_pad=True``: every window is divided by 9, padding counts
as zeros. The window, stride, padding and the block (``BLOCK_SIZE`` output
elements per program) are constants of the arrangement, not autotuned: the
kernel has exactly one config, so that config must fit the Unified Buffer
for every launch (a 64 x 16 tile: 9 window lanes rounded up to 16).
"""

import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend

#: Window, stride and padding (height, width); part of the arrangement.
KERNEL_SIZE = (3, 3)
STRIDE = (2, 2)
PADDING = (1, 1)

#: Output elements per program.
BLOCK_SIZE = 64


def arrangement(input, output):
    input_arranged = input.pad(
        ((0, 0), (0, 0), (PADDING[0], PADDING[0]), (PADDING[1], PADDING[1]))
    )
    input_arranged = input_arranged.tile(
        (1, 1, *KERNEL_SIZE), strides=(-1, -1, *STRIDE), floor_mode=True
    )
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=4).flatten(start_dim=1)
    input_arranged = input_arranged.tile((BLOCK_SIZE, -1))

    output_arranged = output.tile((1, 1, 1, 1))
    output_arranged = output_arranged.ravel()
    output_arranged = output_arranged.flatten(end_dim=4).flatten(start_dim=1)
    output_arranged = output_arranged.tile((BLOCK_SIZE, -1))
    output_arranged.dtype = output_arranged.dtype.squeeze(1)

    return input_arranged, output_arranged


def application(input, output):
    # count_include_pad: the window size, padding included (KERNEL_SIZE 3 x 3).
    total = ntl.sum(ntl.cast(input, ntl.float32), axis=-1)
    output = total / 9  # noqa: F841


tensors = (Tensor(4, other=0), Tensor(4))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="avg_pool2d"
)


CASES = (
    {"batch": 2, "channels": 3, "height": 13, "width": 11},
    {"batch": 1, "channels": 5, "height": 8, "width": 17},
)


def inputs(device, dtype=torch.float16, batch=2, channels=3, height=13, width=11):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((batch, channels, height, width), generator=generator).to(
            device, dtype
        ),
    )


def _output_size(size, kernel_size, stride, padding):
    return (size + 2 * padding - kernel_size) // stride + 1


def launch(kernel, input):
    batch, channels, height, width = input.shape
    output = torch.empty(
        (
            batch,
            channels,
            _output_size(height, KERNEL_SIZE[0], STRIDE[0], PADDING[0]),
            _output_size(width, KERNEL_SIZE[1], STRIDE[1], PADDING[1]),
        ),
        device=input.device,
        dtype=input.dtype,
    )
    kernel(input, output)

    return output


def reference(input):
    return torch.nn.functional.avg_pool2d(
        input.float(), KERNEL_SIZE, stride=STRIDE, padding=PADDING
    ).to(input.dtype)
