"""Libdevice functions computed with NumPy, for emulated CPU variants in Triton's interpreter."""

import functools
import operator

import numpy as np

from ninetoothed_ascend.compiler.libdevice_table import ASCEND_FUNCTIONS


def numpy_elementwise(name, *args):
    """Compute libdevice function ``name`` on interpreter tensors with NumPy.

    Called from emulated CPU variants, inside Triton's interpreter, where
    ``extern_elementwise`` (every libdevice call) raises
    ``NotImplementedError`` (Triton 3.9, ``interpreter_builder``). The
    arguments are promoted and broadcast as Triton's elementwise operators
    do; the function is computed in fp64 and the result cast to the promoted
    dtype (``int1`` for predicates).

    :param name: ``str``, a function of
        :data:`~ninetoothed_ascend.compiler.libdevice_table.ASCEND_FUNCTIONS` whose
        portable meaning is computed with NumPy.
    :param args: interpreter ``triton.language.tensor`` values or Python numbers.
    :return: ``triton.language.tensor`` of the broadcast shape.
    :raises NotImplementedError: ``nextafter`` or ``div_rz`` on a dtype NumPy lacks (bf16).
    """

    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    portable = ASCEND_FUNCTIONS[name].portable
    function = portable.numpy
    like = functools.reduce(operator.add, args)

    if not isinstance(like, tl.tensor):
        return float(function(*(np.float64(arg) for arg in args)))

    arrays = np.broadcast_arrays(
        *(
            np.asarray(tl.cast(arg, tl.float64).handle.data, dtype=np.float64)
            for arg in args
        )
    )

    if portable.numpy_dtype:
        dtype = {tl.float16: np.float16, tl.float32: np.float32, tl.float64: np.float64}
        if like.dtype not in dtype:
            raise NotImplementedError(
                f"emulating libdevice.{name} on {like.dtype} needs a NumPy type for it; "
                "use fp16, fp32 or fp64."
            )
        result = function(*arrays, dtype[like.dtype])
    else:
        result = function(*arrays)

    boolean = portable.boolean
    element = tl.int1 if boolean else tl.float64
    data = np.ascontiguousarray(
        np.broadcast_to(result, like.handle.data.shape),
        dtype=np.bool_ if boolean else np.float64,
    )
    result_type = (
        tl.block_type(element, like.shape) if like.type.is_block() else element
    )
    output = tl.tensor(TensorHandle(data, element), result_type)

    return output if boolean else output.to(like.dtype)


def numpy_flip(input, dim=-1):
    """Reverse an interpreter tensor along ``dim``, as triton-ascend's ``libdevice.flip(input, dim)`` does.

    :param input: interpreter ``triton.language.tensor`` of any shape.
    :param dim: ``int`` (or ``constexpr``), the dimension; negative counts from the last.
    :return: ``triton.language.tensor`` of the same shape and dtype.
    """

    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    dim = getattr(dim, "value", dim)
    data = np.ascontiguousarray(
        np.flip(input.handle.data, axis=-1 if dim is None else dim)
    )

    return tl.tensor(TensorHandle(data, input.handle.dtype), input.type)
