"""Power through libdevice: ``output = input ** exponent``, element-wise, computed in float32.

Written as ntops writes ``pow`` (``libdevice.pow(input, exponent)``), with
16-bit inputs cast to float32 since CUDA's libdevice ``pow`` has only float32 and
float64 forms. The bases are positive, so every real exponent is in the
domain. ``launch`` views tensors of any shape as matrices of their last
dimension.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor
from ninetoothed.language import libdevice

import ninetoothed_ascend


def arrangement(input, exponent, output, BLOCK_SIZE=ninetoothed.block_size()):
    return (
        input.tile((1, BLOCK_SIZE)),
        exponent.tile((1, BLOCK_SIZE)),
        output.tile((1, BLOCK_SIZE)),
    )


def application(input, exponent, output):
    output = libdevice.pow(  # noqa: F841
        ntl.cast(input, ntl.float32), ntl.cast(exponent, ntl.float32)
    )


tensors = (Tensor(2), Tensor(2), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="math_pow"
)


CASES = ({"shape": (4099,)}, {"shape": (3, 5, 67)})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"shape": (8192, 8192)},)


#: Triton's interpreter has no libdevice: its functions are stubs that return
#: None ("TypeError: cannot convert None of type <class 'NoneType'> to
#: tensor", measured with Triton 3.9 and TRITON_INTERPRET=1 on a bare
#: ``triton.jit`` kernel too).
def inputs(device, dtype=torch.float16, shape=(4099,)):
    generator = torch.Generator().manual_seed(0)
    # Bases in [0.1, 4], exponents in [-3, 3]: results from 1/64 to 1000.
    input = 0.1 + 3.9 * torch.rand(shape, generator=generator)
    exponent = 6 * torch.rand(shape, generator=generator) - 3

    return input.to(device, dtype), exponent.to(device, dtype)


def launch(kernel, input, exponent):
    output = torch.empty_like(input)
    kernel(*(tensor.view(-1, tensor.shape[-1]) for tensor in (input, exponent, output)))

    return output


def reference(input, exponent):
    return torch.pow(input.float(), exponent.float()).to(input.dtype)
