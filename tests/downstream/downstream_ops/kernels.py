"""Arrangement, applications and ``premake``, in the style of ntops."""

import functools

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor


def arrangement(input, other, output, block_size=None):
    if block_size is None:
        block_size = ninetoothed.block_size()

    return tuple(
        tensor.flatten().tile((block_size,)) for tensor in (input, other, output)
    )


def add(input, other, output):
    output = input + other  # noqa: F841


def sub(input, other, output):
    output = input - other  # noqa: F841


def mul(input, other, output):
    output = input * other  # noqa: F841


def div(input, other, output):
    output = input / other  # noqa: F841


def maximum(input, other, output):
    output = ntl.maximum(input, other)  # noqa: F841


def minimum(input, other, output):
    output = ntl.minimum(input, other)  # noqa: F841


def axpy(input, other, output):
    output = input * 2 + other  # noqa: F841


def sub_scaled(input, other, output):
    output = input - other * 3  # noqa: F841


def mean2(input, other, output):
    output = (input + other) * 0.5  # noqa: F841


def square_add(input, other, output):
    output = input * input + other  # noqa: F841


def fma(input, other, output):
    output = input * other + input  # noqa: F841


def abs_add(input, other, output):
    output = ntl.abs(input) + other  # noqa: F841


def where_max(input, other, output):
    output = ntl.where(input > other, input, other)  # noqa: F841


def quarter_sub(input, other, output):
    output = input * 0.25 - other  # noqa: F841


def squared_difference(input, other, output):
    output = (input - other) * (input - other)  # noqa: F841


def add_one(input, other, output):
    output = input + other + 1  # noqa: F841


def relu_add(input, other, output):
    output = ntl.maximum(input, 0.0) + other  # noqa: F841


def mul_square(input, other, output):
    output = input * other * other  # noqa: F841


def sub_twice(input, other, output):
    output = input - 2 * other  # noqa: F841


def shifted_mul(input, other, output):
    output = (input + 1) * other  # noqa: F841


APPLICATIONS = {
    func.__name__: func
    for func in (
        add,
        sub,
        mul,
        div,
        maximum,
        minimum,
        axpy,
        sub_scaled,
        mean2,
        square_add,
        fma,
        abs_add,
        where_max,
        quarter_sub,
        squared_difference,
        add_one,
        relu_add,
        mul_square,
        sub_twice,
        shifted_mul,
    )
}


@functools.cache
def premake(op, ndim, dtype=None, block_size=None):
    arrangement_ = functools.partial(arrangement, block_size=block_size)
    tensors = tuple(Tensor(ndim, dtype=dtype) for _ in range(3))

    return arrangement_, APPLICATIONS[op], tensors
