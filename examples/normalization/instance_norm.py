"""Instance normalization with input statistics, as ``torch.nn.functional.instance_norm``: one program per ``(sample, channel)`` plane.

The program loops over the plane's tiles three times: the mean, the
variance of the lanes inside the plane (lanes past its end are loaded as 0
and left out by comparing their offsets with the plane's length), then
``(x - mean) / sqrt(var + eps) * weight + bias``. Statistics in fp32. The
arrangement is a ``functools.partial`` of a library-style arrangement with
its block size, as operator libraries build them.
"""

import functools

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def plane_arrangement(
    input, weight, bias, eps, output, num_normalized_elements, block_size=None
):
    if block_size is None:
        block_size = ninetoothed.block_size()

    def per_plane(tensor):
        arranged = tensor.tile((1, 1, block_size)).tile((1, 1, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))

        return arranged

    def per_channel(tensor, planes):
        arranged = tensor.tile((1,)).unsqueeze(0).expand((planes.shape[0], -1))
        arranged.dtype = arranged.dtype.squeeze(0)

        return arranged

    input_arranged = per_plane(input)

    return (
        input_arranged,
        per_channel(weight, input_arranged),
        per_channel(bias, input_arranged),
        eps,
        per_plane(output),
        num_normalized_elements,
    )


def application(input, weight, bias, eps, output, num_normalized_elements):
    partial_sum = ntl.zeros(input.dtype.shape, dtype=ntl.float32)

    for i in range(input.shape[0]):
        partial_sum += ntl.cast(input[i], ntl.float32)

    mean = ntl.sum(partial_sum, 0) / num_normalized_elements
    partial_squares = ntl.zeros(input.dtype.shape, dtype=ntl.float32)

    for i in range(input.shape[0]):
        diff = ntl.cast(input[i], ntl.float32) - mean
        diff = ntl.where(input[i].offsets(-1) < input.source.shape[-1], diff, 0)
        partial_squares += diff * diff

    std = ntl.sqrt(ntl.sum(partial_squares, 0) / num_normalized_elements + eps)

    for i in range(input.shape[0]):
        output[i] = (ntl.cast(input[i], ntl.float32) - mean) / std * weight + bias


tensors = (
    Tensor(3, other=0),
    Tensor(1),
    Tensor(1),
    Tensor(0),
    Tensor(3),
    Tensor(0, constexpr=True),
)

# The block size is made once, here, as a library's premake does: made inside
# the arrangement, each make would take the next name from NineToothed's
# counter, so plain NineToothed's source made later (tests/jit/test_variants.py)
# could not be compared byte for byte with this kernel's.
arrangement = functools.partial(plane_arrangement, block_size=ninetoothed.block_size())

kernel = ninetoothed_ascend.make(
    arrangement,
    application,
    tensors,
    kernel_name="instance_norm",
)

CASES = ({"batch": 2, "channels": 3, "length": 300},)


def inputs(device, dtype=torch.float16, batch=2, channels=3, length=300):
    generator = torch.Generator().manual_seed(0)

    return (
        (torch.randn((batch, channels, length), generator=generator) * 2 + 0.5).to(
            device, dtype
        ),
        torch.rand((channels,), generator=generator).to(device, dtype),
        torch.randn((channels,), generator=generator).to(device, dtype),
    )


def launch(kernel, input, weight, bias, eps=1e-5):
    output = torch.empty_like(input)
    kernel(input, weight, bias, eps, output, input.shape[-1])

    return output


def reference(input, weight, bias, eps=1e-5):
    return torch.nn.functional.instance_norm(
        input.float(), weight=weight.float(), bias=bias.float(), eps=eps
    ).to(input.dtype)
