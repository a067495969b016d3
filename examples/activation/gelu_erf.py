"""GELU, exact (erf) form: ``output = input * (1 + erf(input / sqrt(2))) / 2``, computed in float32.

``torch.nn.functional.gelu(input)`` with ``approximate="none"``. ``launch``
views a tensor of any shape as the matrix of its last dimension; each program
takes a ``(1, BLOCK_SIZE)`` tile of a row.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((1, BLOCK_SIZE)), output.tile((1, BLOCK_SIZE))


def application(input, output):
    input_fp32 = ntl.cast(input, ntl.float32)
    output = input_fp32 * 0.5 * (1 + ntl.erf(input_fp32 / ntl.sqrt(2.0)))  # noqa: F841


tensors = (Tensor(2), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="gelu_erf"
)


CASES = ({"shape": (4099,)}, {"shape": (3, 5, 67)})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"shape": (8192, 8192)},)


def inputs(device, dtype=torch.float16, shape=(4099,)):
    generator = torch.Generator().manual_seed(0)

    return ((3 * torch.randn(shape, generator=generator)).to(device, dtype),)


def launch(kernel, input):
    output = torch.empty_like(input)
    kernel(input.view(-1, input.shape[-1]), output.view(-1, output.shape[-1]))

    return output


def reference(input):
    return torch.nn.functional.gelu(input.float()).to(input.dtype)
