"""SiLU (swish): ``output = input * sigmoid(input)``, computed in float32.

Written as ntops writes it: ``input / (1 + exp(-input))`` with the input cast
to float32. ``launch`` views a tensor of any shape as the matrix of its last
dimension; each program takes a ``(1, BLOCK_SIZE)`` tile of a row.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((1, BLOCK_SIZE)), output.tile((1, BLOCK_SIZE))


def application(input, output):
    output = input / (1 + ntl.exp(-ntl.cast(input, ntl.float32)))  # noqa: F841


tensors = (Tensor(2), Tensor(2))

kernel = ninetoothed_ascend.make(arrangement, application, tensors, kernel_name="silu")


CASES = ({"shape": (4099,)}, {"shape": (3, 5, 67)})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"shape": (8192, 8192)},)


def inputs(device, dtype=torch.float16, shape=(4099,)):
    generator = torch.Generator().manual_seed(0)

    return ((4 * torch.randn(shape, generator=generator)).to(device, dtype),)


def launch(kernel, input):
    output = torch.empty_like(input)
    kernel(input.view(-1, input.shape[-1]), output.view(-1, output.shape[-1]))

    return output


def reference(input):
    return torch.nn.functional.silu(input.float()).to(input.dtype)
