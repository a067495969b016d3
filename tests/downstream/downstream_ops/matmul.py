"""Matrix multiplication whose ``dot`` precision is a constexpr flag chosen in the kernel, in the style of ntops."""

import functools

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

#: Values of the ``input_precision`` flag.
TF32, IEEE = 0, 1


def arrangement(
    input,
    other,
    output,
    input_precision,
    block_size_m=None,
    block_size_n=None,
    block_size_k=None,
):
    if block_size_m is None:
        block_size_m = ninetoothed.block_size(lower_bound=32, upper_bound=64)

    if block_size_n is None:
        block_size_n = ninetoothed.block_size(lower_bound=32, upper_bound=64)

    if block_size_k is None:
        block_size_k = ninetoothed.block_size(lower_bound=32, upper_bound=32)

    output_arranged = output.tile((block_size_m, block_size_n))

    input_arranged = input.tile((block_size_m, block_size_k)).tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((block_size_k, block_size_n)).tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)

    return input_arranged, other_arranged, output_arranged, input_precision


def application(input, other, output, input_precision):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    if input_precision == 0:
        input_precision_: ntl.constexpr = "tf32"
    else:
        input_precision_: ntl.constexpr = "ieee"

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k], input_precision=input_precision_)

    output = accumulator  # noqa: F841


@functools.cache
def premake(dtype=None):
    arrangement_ = functools.partial(arrangement)
    tensors = (
        Tensor(2, other=0, dtype=dtype),
        Tensor(2, other=0, dtype=dtype),
        Tensor(2, dtype=dtype),
        Tensor(0, constexpr=True),
    )

    return arrangement_, application, tensors
