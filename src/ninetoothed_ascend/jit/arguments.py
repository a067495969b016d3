"""Launch-time argument checks: what a kernel's launch requires of the tensors it is called with, checked before it runs.

NineToothed's generated launch function takes any tensors: a tensor with more
dimensions than the kernel's is read along its first ones only, a shorter
operand is masked (read as the tensor's ``other`` value, zero by default),
and a 0-d tensor fails with ``IndexError`` inside the generated source. The
NPU and CPU variants are ours, so their launches are checked first
(:func:`checked`); the CUDA variant keeps NineToothed's behaviour unless
``$NINETOOTHED_ASCEND_CHECK_ARGS`` is ``1``.

What the arrangement requires (the number of dimensions of each tensor, the
sizes and element counts that must match, the tensors the kernel reads or
writes) is the compiler's analysis of NineToothed's source
(:class:`~ninetoothed_ascend.compiler.launch.Requirements`), stored with the
kernel's cache entry: a launch reads no source. Besides, for every launch:

- **tensors**: every tensor parameter is a ``torch.Tensor`` (a NumPy array
  has ``shape`` but no ``size(i)``) of a dtype Triton has a type for (no
  complex), whose element offsets stay below 2**31 (Triton computes them in
  32 bits: beyond, they wrap, and the interpreter reads outside the tensor).

Meta tensors (``device="meta"``) have shapes and are checked like any other;
no check reads data.
"""

import functools
import os

import torch

#: Set to ``1`` to check the CUDA variant's arguments too.
CHECK_VARIABLE = "NINETOOTHED_ASCEND_CHECK_ARGS"

#: Names the generated check uses itself; a launch parameter with one of them is not checked.
_GENERATED_NAMES = {"launch", "explain", "ok", "fits", "TYPED"}

#: Element offsets Triton computes in 32 bits: every offset of a tensor must
#: be below this (``tt.addptr`` takes ``i32`` offsets; NineToothed's are
#: ``index * BLOCK_SIZE + arange`` times a stride, all ``i32`` for sizes and
#: strides below 2**31).
MAX_OFFSET = 2**31

#: The torch dtypes Triton has a type for (Triton 3.2 and 3.9,
#: ``triton.runtime.jit``'s dtype names: bool, signed and unsigned integers,
#: float8, fp16, bf16, fp32, fp64); complex and quantized dtypes have none.
TRITON_DTYPES = frozenset(
    getattr(torch, name)
    for name in (
        "bool",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "int8",
        "int16",
        "int32",
        "int64",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float16",
        "bfloat16",
        "float32",
        "float64",
    )
    if hasattr(torch, name)
)


def requested(variant):
    """Whether launches of ``variant`` (``"cuda"``, ``"npu"``, ``"cpu"``) are checked.

    The NPU and CPU variants always are; the CUDA variant keeps NineToothed's
    behaviour unless ``$NINETOOTHED_ASCEND_CHECK_ARGS`` is ``1``.
    """

    return variant != "cuda" or os.environ.get(CHECK_VARIABLE) == "1"


def checked(launch, required, kernel_name, variant):
    """Return ``launch`` behind a check of its arguments against ``required``.

    :param launch: the launch function of a variant.
    :param required: :class:`~ninetoothed_ascend.compiler.launch.Requirements`.
    :param kernel_name: ``str``, for messages.
    :param variant: ``str``, for messages.
    :return: a function with ``launch``'s parameters that checks them and
        calls ``launch``; one boolean expression on the fast path
        (docs/benchmarks.md: the per-call cost).
    :raises TypeError: (from the returned function) a tensor parameter is
        given something else, or a tensor of a dtype Triton has no type for.
    :raises ValueError: (from the returned function) an argument has the
        wrong ndim, a size or element count that does not match, offsets
        past 32 bits, or is a ``meta`` tensor the kernel reads or writes;
        the message names the kernel, the variant, the argument, and
        expected against given.
    """

    names = required.parameters
    # One ``.shape`` per tensor, then tuple operations: ``.dim()`` and
    # ``.size(i)`` are a torch call each (docs/benchmarks.md).
    shape = {index: f"_shape_{index}" for index, _ in required.ndims}
    # A NumPy array has a ``shape``, and a ``dtype`` that is not a torch
    # dtype: ``dtype in TYPED`` refuses it with a complex tensor. Storage of
    # at most 2**31 bytes holds no element offset of 2**31 or more.
    terms = [f"len({shape[index]}) == {ndim}" for index, ndim in required.ndims]
    terms += [f"{names[index]}.dtype in TYPED" for index in shape]
    terms += [
        f"({names[index]}.untyped_storage().nbytes() <= {MAX_OFFSET} "
        f"or fits({names[index]}))"
        for index in shape
    ]
    terms += [f"not {names[index]}.is_meta" for index in required.accessed]
    terms += [
        " == ".join(f"{shape[index]}[{dimension}]" for index, dimension in group)
        for group in required.equal_sizes
    ]
    terms += [
        " == ".join(f"{names[index]}.numel()" for index in group)
        for group in required.equal_numels
    ]

    if not shape or _GENERATED_NAMES.union(shape.values()).intersection(names):
        return launch

    arguments = ", ".join(names)
    shapes = ", ".join(shape.values())
    tensors = ", ".join(f"{names[index]}.shape" for index in shape)
    source = "\n".join(
        [
            f"def checked({arguments}):",
            "    try:",
            f"        {shapes}, = {tensors},",
            f"        ok = {' and '.join(terms)}",
            "    except (AttributeError, TypeError):  # not a tensor",
            "        ok = False",
            "    if not ok:",
            f"        explain(({arguments},))",
            f"    return launch({arguments})",
        ]
    )
    namespace = {
        "launch": launch,
        "explain": functools.partial(_explain, required, kernel_name, variant),
        "TYPED": TRITON_DTYPES,
        "fits": _fits,
    }
    exec(compile(source, f"<argument check of {kernel_name}>", "exec"), namespace)

    return functools.wraps(launch)(namespace["checked"])


def _fits(tensor):
    # Every element offset of ``tensor`` is below :data:`MAX_OFFSET`.
    if tensor.numel() <= MAX_OFFSET and tensor.is_contiguous():
        return True

    return _largest_offset(tensor) < MAX_OFFSET


def _largest_offset(tensor):
    if tensor.numel() == 0:
        return 0

    return sum(
        (size - 1) * abs(stride) for size, stride in zip(tensor.shape, tensor.stride())
    )


def _explain(required, kernel_name, variant, args):
    def describe(index):
        return f"argument {index + 1} (`{required.parameters[index]}`)"

    prefix = f"kernel `{kernel_name}` ({variant} variant): "

    for index, ndim in required.ndims:
        arg = args[index]

        if not isinstance(arg, torch.Tensor):
            kind = type(arg)
            given = (
                kind.__qualname__
                if kind.__module__ == "builtins"
                else f"{kind.__module__}.{kind.__qualname__}"
            )
            raise TypeError(
                f"{prefix}{describe(index)} must be a torch.Tensor with {ndim} "
                f"dimensions, given {given}"
            )

        if arg.dim() != ndim:
            raise ValueError(
                f"{prefix}{describe(index)} must have {ndim} dimensions, given a "
                f"tensor of shape {tuple(arg.shape)} ({arg.dim()} dimensions)"
            )

        if arg.dtype not in TRITON_DTYPES:
            raise TypeError(
                f"{prefix}{describe(index)} has dtype {arg.dtype}, which Triton has "
                "no type for; expected bool, an integer or a floating-point dtype "
                "(a complex tensor can be passed as torch.view_as_real(tensor))"
            )

        if not _fits(arg):
            raise ValueError(
                f"{prefix}{describe(index)} reaches element offset "
                f"{_largest_offset(arg)} (shape {tuple(arg.shape)}, strides "
                f"{arg.stride()}); Triton computes offsets in 32 bits, so they "
                f"must stay below 2**31: split the tensor"
            )

    for index in required.accessed:
        if args[index].is_meta:
            raise ValueError(
                f"{prefix}{describe(index)} is a meta tensor, which has no data, "
                "and the kernel reads or writes it; pass a tensor on the device "
                "of the others"
            )

    for group in required.equal_sizes:
        (first, first_dimension), *others = group
        expected = args[first].size(first_dimension)

        for index, dimension in others:
            given = args[index].size(dimension)

            if given != expected:
                raise ValueError(
                    f"{prefix}{describe(index)} must have size {expected} in "
                    f"dimension {dimension}, as {describe(first)} has in dimension "
                    f"{first_dimension} (the arrangement reads them together); "
                    f"given {given} (shape {tuple(args[index].shape)})"
                )

    for first, *others in required.equal_numels:
        expected = args[first].numel()

        for index in others:
            given = args[index].numel()

            if given != expected:
                raise ValueError(
                    f"{prefix}{describe(index)} must have {expected} elements, as "
                    f"{describe(first)} has (the arrangement flattens both and "
                    f"reads them together); given {given} (shape "
                    f"{tuple(args[index].shape)})"
                )


__all__ = ["CHECK_VARIABLE", "MAX_OFFSET", "TRITON_DTYPES", "checked", "requested"]
