"""Element-wise addition of two vectors: ``output = input + other``."""

import ninetoothed
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(input, other, output, BLOCK_SIZE=ninetoothed.block_size()):
    return (
        input.tile((BLOCK_SIZE,)),
        other.tile((BLOCK_SIZE,)),
        output.tile((BLOCK_SIZE,)),
    )


def application(input, other, output):
    output = input + other  # noqa: F841


tensors = (Tensor(1), Tensor(1), Tensor(1))

kernel = ninetoothed_ascend.make(arrangement, application, tensors, kernel_name="add")


#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"shape": (1 << 26,)},)


def inputs(device, dtype=torch.float16, shape=(4099,)):
    generator = torch.Generator().manual_seed(0)

    return tuple(
        torch.randn(shape, generator=generator, dtype=torch.float32).to(device, dtype)
        for _ in range(2)
    )


def launch(kernel, input, other):
    output = torch.empty_like(input)
    kernel(input, other, output)

    return output


def reference(input, other):
    return input + other
