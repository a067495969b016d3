"""SiLU-and-multiply of a tensor's two halves: ``output = silu(input[..., :d]) * input[..., d:]``.

The gated MLP activation of LLaMA-style models (vLLM's ``silu_and_mul``),
on an input whose last dimension is ``2 * d``. ``launch`` views the input as
``(rows, 2, d)``; the arrangement pairs each ``(1, BLOCK_SIZE)`` output tile
with the two input tiles at the same column, one per half, so a program reads
the gate as ``input[0]`` and the up projection as ``input[1]``.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    output_arranged = output.tile((1, BLOCK_SIZE))

    input_arranged = input.tile((1, 1, BLOCK_SIZE))
    input_arranged = input_arranged.tile((1, 2, 1))
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze((0, 2))
    input_arranged.dtype.dtype = input_arranged.dtype.dtype.squeeze(0)

    return input_arranged, output_arranged


def application(input, output):
    gate = ntl.cast(input[0], ntl.float32)
    output = gate * ntl.sigmoid(gate) * input[1]  # noqa: F841


tensors = (Tensor(3), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="silu_and_mul"
)


CASES = ({"shape": (7, 2 * 300)}, {"shape": (2, 3, 2 * 67)})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"shape": (8192, 2 * 8192)},)


def inputs(device, dtype=torch.float16, shape=(7, 2 * 300)):
    generator = torch.Generator().manual_seed(0)

    return ((3 * torch.randn(shape, generator=generator)).to(device, dtype),)


def launch(kernel, input):
    d = input.shape[-1] // 2
    output = torch.empty((*input.shape[:-1], d), device=input.device, dtype=input.dtype)
    kernel(input.view(-1, 2, d), output.view(-1, d))

    return output


def reference(input):
    gate, up = input.float().chunk(2, dim=-1)

    return (torch.nn.functional.silu(gate) * up).to(input.dtype)
