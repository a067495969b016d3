"""Conversion to another floating-point dtype: ``output = input.to(output.dtype)``.

The kernel copies and the store converts (ntops' ``cast``: the application is
``output = input``). ``launch`` picks the output dtype: 16-bit inputs widen to
float32, float32 inputs narrow to float16, so both directions are checked.
"""

import ninetoothed
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((1, BLOCK_SIZE)), output.tile((1, BLOCK_SIZE))


def application(input, output):
    output = input  # noqa: F841


tensors = (Tensor(2), Tensor(2))

kernel = ninetoothed_ascend.make(arrangement, application, tensors, kernel_name="cast")


CASES = ({"shape": (4099,)}, {"shape": (3, 5, 67)})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"shape": (8192, 8192)},)

#: Output dtype by input dtype.
OUTPUT_DTYPES = {
    torch.float16: torch.float32,
    torch.bfloat16: torch.float32,
    torch.float32: torch.float16,
}


def inputs(device, dtype=torch.float16, shape=(4099,)):
    generator = torch.Generator().manual_seed(0)

    return (torch.randn(shape, generator=generator).to(device, dtype),)


def launch(kernel, input):
    output = torch.empty_like(input, dtype=OUTPUT_DTYPES[input.dtype])
    kernel(input.view(-1, input.shape[-1]), output.view(-1, output.shape[-1]))

    return output


def reference(input):
    return input.to(OUTPUT_DTYPES[input.dtype])
