"""2-D max pooling (NCHW) with a fixed 2 x 2 window and a fixed block, as operator libraries write it.

``torch.nn.functional.max_pool2d(input, 2)``: a 2 x 2 window, stride 2, no
padding. The window, stride and the block (``BLOCK_SIZE`` output elements
per program) are constants of the arrangement, not autotuned: the kernel has
exactly one config, so that config must fit the Unified Buffer for every
launch (a 256 x 4 tile). ``max_pool2d`` is the autotuned, padded form.
"""

import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend

#: Window and stride (height, width); part of the arrangement.
KERNEL_SIZE = (2, 2)
STRIDE = (2, 2)

#: Output elements per program.
BLOCK_SIZE = 256


def arrangement(input, output):
    input_arranged = input.tile(
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
    output = ntl.max(input, axis=-1)  # noqa: F841


tensors = (Tensor(4, other=float("-inf")), Tensor(4))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="max_pool2d_fixed"
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


def _output_size(size, kernel_size, stride):
    return (size - kernel_size) // stride + 1


def launch(kernel, input):
    batch, channels, height, width = input.shape
    output = torch.empty(
        (
            batch,
            channels,
            _output_size(height, KERNEL_SIZE[0], STRIDE[0]),
            _output_size(width, KERNEL_SIZE[1], STRIDE[1]),
        ),
        device=input.device,
        dtype=input.dtype,
    )
    kernel(input, output)

    return output


def reference(input):
    return torch.nn.functional.max_pool2d(input, KERNEL_SIZE, stride=STRIDE)
