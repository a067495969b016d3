"""Concatenation of two tensors along a dimension: ``output = torch.cat((input, other), dim)``.

One copy kernel, launched once per input into the slice of ``output`` it
fills (``output.narrow(dim, start, length)``): the destination is a strided
view whose rows are not contiguous with each other, which the kernel's
three-dimensional arrangement takes through its strides. Lower-rank tensors
are viewed as three-dimensional with leading dimensions of size 1.
"""

import ninetoothed
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((1, 1, BLOCK_SIZE)), output.tile((1, 1, BLOCK_SIZE))


def application(input, output):
    output = input  # noqa: F841


tensors = (Tensor(3), Tensor(3))

kernel = ninetoothed_ascend.make(arrangement, application, tensors, kernel_name="cat")


CASES = (
    {"shapes": ((37, 100), (20, 100)), "dim": 0},
    {"shapes": ((37, 50), (37, 77)), "dim": 1},
    {"shapes": ((2, 5, 40), (2, 7, 40)), "dim": 1},
)


def inputs(device, dtype=torch.float16, shapes=((37, 50), (37, 77)), dim=1):
    """Two tensors and ``dim``, an ``int``."""

    generator = torch.Generator().manual_seed(0)

    return (
        *(
            torch.randn(shape, generator=generator).to(device, dtype)
            for shape in shapes
        ),
        dim,
    )


def launch(kernel, input, other, dim):
    shape = list(input.shape)
    shape[dim] += other.shape[dim]
    output = torch.empty(shape, device=input.device, dtype=input.dtype)
    start = 0

    for tensor in (input, other):
        length = tensor.shape[dim]
        kernel(_as_3d(tensor), _as_3d(output.narrow(dim, start, length)))
        start += length

    return output


def _as_3d(tensor):
    return tensor.view((1,) * (3 - tensor.ndim) + tuple(tensor.shape))


def reference(input, other, dim):
    return torch.cat((input, other), dim)
