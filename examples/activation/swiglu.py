"""SwiGLU of two tensors of the same shape: ``output = input * silu(gate)``, the gate in float32.

Written as NineToothed's own examples write it (``swiglu_kernel`` in
InfiniTensor's ninetoothed-examples): ``gate * sigmoid(float32(gate))``.
``launch`` views tensors of any shape as matrices of their last dimension.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(input, gate, output, BLOCK_SIZE=ninetoothed.block_size()):
    return (
        input.tile((1, BLOCK_SIZE)),
        gate.tile((1, BLOCK_SIZE)),
        output.tile((1, BLOCK_SIZE)),
    )


def application(input, gate, output):
    gate_loaded = gate
    output = input * (  # noqa: F841
        gate_loaded * ntl.sigmoid(ntl.cast(gate_loaded, ntl.float32))
    )


tensors = (Tensor(2), Tensor(2), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="swiglu"
)


CASES = ({"shape": (4099,)}, {"shape": (3, 5, 67)})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"shape": (8192, 8192)},)


def inputs(device, dtype=torch.float16, shape=(4099,)):
    generator = torch.Generator().manual_seed(0)

    return tuple(
        (3 * torch.randn(shape, generator=generator)).to(device, dtype)
        for _ in range(2)
    )


def launch(kernel, input, gate):
    output = torch.empty_like(input)
    kernel(*(tensor.view(-1, tensor.shape[-1]) for tensor in (input, gate, output)))

    return output


def reference(input, gate):
    return (input.float() * torch.nn.functional.silu(gate.float())).to(input.dtype)
