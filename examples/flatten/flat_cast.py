"""Conversion to another floating-point dtype for tensors of any shape and strides.

One arrangement for every ndim, as in ``flat_sigmoid``; the store converts
(``output = input``). 16-bit inputs widen to float32, float32 narrows to
float16; the output is contiguous, so the two tensors of one call may take
different paths.
"""

import ninetoothed
import torch
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.examples import as_ndim, laid_out

NDIM = 4

#: Output dtype by input dtype.
OUTPUT_DTYPES = {
    torch.float16: torch.float32,
    torch.bfloat16: torch.float32,
    torch.float32: torch.float16,
}


def arrangement(*tensors, BLOCK_SIZE=ninetoothed.block_size()):
    return tuple(tensor.flatten().tile((BLOCK_SIZE,)) for tensor in tensors)


def application(input, output):
    output = input  # noqa: F841


tensors = (Tensor(NDIM), Tensor(NDIM))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="flat_cast"
)

CASES = (
    {"shape": (3, 5, 7)},
    {"shape": (2, 3, 4, 5), "layout": "transposed"},
    {"shape": (4, 6), "layout": "strided"},
)


def inputs(device, dtype=torch.float16, shape=(3, 5, 7), layout="contiguous"):
    generator = torch.Generator().manual_seed(0)

    return (
        laid_out(torch.randn(shape, generator=generator).to(device, dtype), layout),
    )


def launch(kernel, input):
    output = torch.empty(
        input.shape, dtype=OUTPUT_DTYPES[input.dtype], device=input.device
    )
    kernel(as_ndim(input, NDIM), as_ndim(output, NDIM))

    return output


def reference(input):
    return input.to(OUTPUT_DTYPES[input.dtype])
