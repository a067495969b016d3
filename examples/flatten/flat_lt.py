"""Element-wise ``input < other`` into a ``bool`` tensor, for tensors of any shape and strides.

One arrangement for every ndim, as in ``flat_sigmoid``; the output's dtype
differs from the inputs'.
"""

import ninetoothed
import torch
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.examples import as_ndim, laid_out

NDIM = 4


def arrangement(*tensors, BLOCK_SIZE=ninetoothed.block_size()):
    return tuple(tensor.flatten().tile((BLOCK_SIZE,)) for tensor in tensors)


def application(input, other, output):
    output = input < other  # noqa: F841


tensors = (Tensor(NDIM), Tensor(NDIM), Tensor(NDIM))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="flat_lt"
)

CASES = (
    {"shape": (3, 5, 7)},
    {"shape": (2, 3, 4, 5), "layout": "transposed"},
    {"shape": (5, 6), "layout": "expanded"},
)


def inputs(device, dtype=torch.float16, shape=(3, 5, 7), layout="contiguous"):
    generator = torch.Generator().manual_seed(0)
    input = torch.randn(shape, generator=generator).to(device, dtype)
    other = torch.randn(shape, generator=generator).to(device, dtype)

    return laid_out(input, layout), other


def launch(kernel, input, other):
    output = torch.empty(input.shape, dtype=torch.bool, device=input.device)
    kernel(as_ndim(input, NDIM), as_ndim(other, NDIM), as_ndim(output, NDIM))

    return output


def reference(input, other):
    return input < other
