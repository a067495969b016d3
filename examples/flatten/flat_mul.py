"""Element-wise product of two tensors that broadcast, of any shape and strides.

The operands are broadcast by ``torch.broadcast_tensors`` (stride-0 views, no
copy) and each tensor flattened and tiled by one arrangement for every ndim,
as in ``flat_sigmoid``.
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
    output = input * other  # noqa: F841


tensors = (Tensor(NDIM), Tensor(NDIM), Tensor(NDIM))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="flat_mul"
)

CASES = (
    {"shape": (3, 5, 7), "other_shape": (3, 5, 7)},
    {"shape": (2, 3, 4, 5), "other_shape": (4, 1), "layout": "transposed"},
    {"shape": (9,), "other_shape": (9,), "layout": "sliced"},
)


def inputs(
    device,
    dtype=torch.float16,
    shape=(3, 5, 7),
    other_shape=(3, 5, 7),
    layout="contiguous",
):
    generator = torch.Generator().manual_seed(0)
    input = torch.randn(shape, generator=generator).to(device, dtype)
    other = torch.randn(other_shape, generator=generator).to(device, dtype)

    return laid_out(input, layout), other


def launch(kernel, input, other):
    input, other = torch.broadcast_tensors(input, other)
    output = torch.empty(input.shape, dtype=input.dtype, device=input.device)
    kernel(as_ndim(input, NDIM), as_ndim(other, NDIM), as_ndim(output, NDIM))

    return output


def reference(input, other):
    return input * other
