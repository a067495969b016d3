"""Natural logarithm through libdevice: ``output = log(input)``, computed in float32.

libdevice is reached as NineToothed users reach it (``from
ninetoothed.language import libdevice``, as in ntops' ``lgamma``), with
16-bit inputs cast to float32 since CUDA's libdevice ``log`` has only float32 and
float64 forms. ``launch`` views a tensor of any shape as the matrix of its
last dimension.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor
from ninetoothed.language import libdevice

import ninetoothed_ascend


def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((1, BLOCK_SIZE)), output.tile((1, BLOCK_SIZE))


def application(input, output):
    output = libdevice.log(ntl.cast(input, ntl.float32))  # noqa: F841


tensors = (Tensor(2), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="math_log"
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

    # Positive, from 1e-3 to 100: inside the domain of log.
    return ((1e-3 + 100 * torch.rand(shape, generator=generator)).to(device, dtype),)


def launch(kernel, input):
    output = torch.empty_like(input)
    kernel(input.view(-1, input.shape[-1]), output.view(-1, output.shape[-1]))

    return output


def reference(input):
    return torch.log(input.float()).to(input.dtype)
