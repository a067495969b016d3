"""Element-wise sigmoid of a tensor of any shape and strides, as operator libraries write it.

One arrangement for every ndim: each tensor is flattened to one dimension and
tiled, so a program's tile is ``BLOCK_SIZE`` consecutive elements in row-major
order whatever the layout. The kernel is built for 4 dims; ``launch`` views
1- to 3-dim tensors with leading size-1 dims. On Ascend the flattened address
is a gather unless the launch finds the layout collapsible
(``ContiguousFlatAccess``); the cases cover both.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.examples import as_ndim, laid_out

NDIM = 4


def arrangement(*tensors, BLOCK_SIZE=ninetoothed.block_size()):
    return tuple(tensor.flatten().tile((BLOCK_SIZE,)) for tensor in tensors)


def application(input, output):
    output = 1 / (1 + ntl.exp(-ntl.cast(input, ntl.float32)))  # noqa: F841


tensors = (Tensor(NDIM), Tensor(NDIM))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="flat_sigmoid"
)

CASES = (
    {"shape": (3, 5, 7)},
    {"shape": (37,)},
    {"shape": (2, 3, 4, 5), "layout": "transposed"},
    {"shape": (6, 9), "layout": "sliced"},
    {"shape": (4, 6), "layout": "strided"},
    {"shape": (3, 2, 5), "layout": "expanded"},
)


def inputs(device, dtype=torch.float16, shape=(3, 5, 7), layout="contiguous"):
    generator = torch.Generator().manual_seed(0)
    values = torch.randn(shape, generator=generator).to(device, dtype)

    return (laid_out(values, layout),)


def launch(kernel, input):
    output = torch.empty(input.shape, dtype=input.dtype, device=input.device)
    kernel(as_ndim(input, NDIM), as_ndim(output, NDIM))

    return output


def reference(input):
    return torch.sigmoid(input.float()).to(input.dtype)
