"""Launch-time argument checks: what a kernel's launch requires of the tensors it is called with, checked before it runs.

NineToothed's generated launch function takes any tensors: a tensor with more
dimensions than the kernel's is read along its first ones only, a shorter
operand is masked (read as the tensor's ``other`` value, zero by default),
and a 0-d tensor fails with ``IndexError`` inside the generated source. The
NPU and CPU variants are ours, so their launches are checked first
(:func:`checked`); the CUDA variant keeps NineToothed's behaviour unless
``$NINETOOTHED_ASCEND_CHECK_ARGS`` is ``1``.

What is checked (the number of dimensions of each tensor, and the sizes
that must match) is the compiler's analysis of NineToothed's source
(:class:`~ninetoothed_ascend.compiler.launch.Requirements`), stored with the
kernel's cache entry: a launch reads no source. Meta tensors
(``device="meta"``) have shapes and are checked like any other; no check
reads data.
"""

import functools
import os

#: Set to ``1`` to check the CUDA variant's arguments too.
CHECK_VARIABLE = "NINETOOTHED_ASCEND_CHECK_ARGS"

#: Names the generated check uses itself; a launch parameter with one of them is not checked.
_GENERATED_NAMES = {"launch", "explain", "ok"}


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
    :raises ValueError: (from the returned function) an argument has the
        wrong ndim or a size that does not match; the message names the
        kernel, the variant, the argument, and expected against given.
    """

    names = required.parameters
    # One ``.shape`` per tensor, then tuple operations: ``.dim()`` and
    # ``.size(i)`` are a torch call each (docs/benchmarks.md).
    shape = {index: f"_shape_{index}" for index, _ in required.ndims}
    terms = [f"len({shape[index]}) == {ndim}" for index, ndim in required.ndims]
    terms += [
        " == ".join(f"{shape[index]}[{dimension}]" for index, dimension in group)
        for group in required.equal_sizes
    ]

    if not terms or _GENERATED_NAMES.union(shape.values()).intersection(names):
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
    }
    exec(compile(source, f"<argument check of {kernel_name}>", "exec"), namespace)

    return functools.wraps(launch)(namespace["checked"])


def _explain(required, kernel_name, variant, args):
    def describe(index):
        return f"argument {index + 1} (`{required.parameters[index]}`)"

    prefix = f"kernel `{kernel_name}` ({variant} variant): "

    for index, ndim in required.ndims:
        arg = args[index]

        if not hasattr(arg, "dim"):
            raise ValueError(
                f"{prefix}{describe(index)} must be a tensor with {ndim} "
                f"dimensions, given {type(arg).__name__}"
            )

        if arg.dim() != ndim:
            raise ValueError(
                f"{prefix}{describe(index)} must have {ndim} dimensions, given a "
                f"tensor of shape {tuple(arg.shape)} ({arg.dim()} dimensions)"
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


__all__ = ["CHECK_VARIABLE", "checked", "requested"]
