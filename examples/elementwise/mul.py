"""Element-wise product of two tensors of the same shape: ``output = input * other``.

The kernel sees matrices and gives each program a ``(1, BLOCK_SIZE)`` tile of
a row (ntops' element-wise arrangement for two dimensions); ``launch`` views a
tensor of any shape as the matrix of its last dimension.
"""

import ninetoothed
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(input, other, output, BLOCK_SIZE=ninetoothed.block_size()):
    return (
        input.tile((1, BLOCK_SIZE)),
        other.tile((1, BLOCK_SIZE)),
        output.tile((1, BLOCK_SIZE)),
    )


def application(input, other, output):
    output = input * other  # noqa: F841


tensors = (Tensor(2), Tensor(2), Tensor(2))

kernel = ninetoothed_ascend.make(arrangement, application, tensors, kernel_name="mul")


CASES = ({"shape": (4099,)}, {"shape": (3, 5, 67)})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"shape": (8192, 8192)},)


def inputs(device, dtype=torch.float16, shape=(4099,)):
    generator = torch.Generator().manual_seed(0)

    return tuple(
        torch.randn(shape, generator=generator).to(device, dtype) for _ in range(2)
    )


def launch(kernel, input, other):
    output = torch.empty_like(input)
    kernel(*(tensor.view(-1, tensor.shape[-1]) for tensor in (input, other, output)))

    return output


def reference(input, other):
    return input * other
