"""Element-wise libdevice math: ``output = tanh(input) + pow(input * input, other) + log1p(input * input)``.

NineToothed kernels reach libdevice through ``ninetoothed.language.libdevice``
(CUDA Triton's ``triton.language.extra.libdevice``); the NPU variant imports
triton-ascend's instead (``RemapLibdevice``), and its emulation maps that
back to portable functions of the same meaning. On the CPU, both the CPU
variant and the emulated NPU variant compute them with core
``triton.language`` and NumPy (Triton's interpreter runs no libdevice).
"""

import ninetoothed
import torch
from ninetoothed import Tensor
from ninetoothed.language import libdevice

import ninetoothed_ascend


def arrangement(input, other, output, BLOCK_SIZE=ninetoothed.block_size()):
    return (
        input.tile((BLOCK_SIZE,)),
        other.tile((BLOCK_SIZE,)),
        output.tile((BLOCK_SIZE,)),
    )


def application(input, other, output):
    square = input * input
    output = (  # noqa: F841
        libdevice.tanh(input) + libdevice.pow(square, other) + libdevice.log1p(square)
    )


tensors = (Tensor(1), Tensor(1), Tensor(1))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="libdevice_math"
)

#: CUDA's libdevice has fp32 and fp64 functions only.
DTYPES = (torch.float32,)


#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"size": 1 << 24},)


def inputs(device, dtype=torch.float32, size=1000):
    generator = torch.Generator().manual_seed(0)

    return tuple(
        torch.randn((size,), generator=generator).to(device, dtype) for _ in range(2)
    )


def launch(kernel, input, other):
    output = torch.empty_like(input)
    kernel(input, other, output)

    return output


def reference(input, other):
    square = input * input

    return torch.tanh(input) + torch.pow(square, other) + torch.log1p(square)
