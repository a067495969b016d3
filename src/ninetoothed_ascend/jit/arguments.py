"""Launch-time argument checks: what the arrangement requires of the tensors a kernel is called with.

NineToothed's generated launch function takes any tensors: a tensor with more
dimensions than the kernel's is read along its first ones only, a shorter
operand is masked (read as the tensor's ``other`` value, zero by default),
and a 0-d tensor fails with ``IndexError`` inside the generated source. The
NPU and CPU variants are ours, so their launches are checked first
(:func:`checked`); the CUDA variant keeps NineToothed's behaviour unless
``$NINETOOTHED_ASCEND_CHECK_ARGS`` is ``1``.

What is checked is read from NineToothed's generated source
(:func:`requirements`), never from names:

- **ndim**: the launch function passes ``t.size(i)`` for every dimension
  ``i`` of a tensor parameter ``t``; a tensor with another number of
  dimensions is refused.
- **matching sizes**: in the kernel, every dimension of every tensor is
  masked by a comparison ``offsets < size``. Two dimensions whose offsets
  are the same expression of the program id (after substituting the
  kernel's index variables) address the same elements, so their sizes must
  be equal: a shorter one would be read as padding.

Meta tensors (``device="meta"``) have shapes and are checked like any other;
no check reads data. Dtypes are not checked: NineToothed's source does not say
which dtypes a kernel accepts.
"""

import ast
import dataclasses
import functools
import os

from ninetoothed_ascend.compiler.syntax import find, structure, walk

#: Set to ``1`` to check the CUDA variant's arguments too.
CHECK_VARIABLE = "NINETOOTHED_ASCEND_CHECK_ARGS"

#: Names the generated check uses itself; a launch parameter with one of them is not checked.
_GENERATED_NAMES = {"launch", "explain", "ok"}


@dataclasses.dataclass(frozen=True)
class Requirements:
    """What a kernel's launch requires of its arguments.

    :param parameters: ``tuple`` of ``str``, the launch function's parameters.
    :param ndims: ``tuple`` of ``(parameter index, ndim)`` for each tensor parameter.
    :param equal_sizes: ``tuple`` of groups, each a ``tuple`` of
        ``(parameter index, dimension)`` whose sizes must be equal.
    """

    parameters: tuple
    ndims: tuple
    equal_sizes: tuple

    def to_json(self):
        """Return the fields as JSON lists (``dict``), as a cache entry's ``launch`` stores them."""

        return {
            "parameters": list(self.parameters),
            "ndims": [list(pair) for pair in self.ndims],
            "equal_sizes": [
                [list(pair) for pair in group] for group in self.equal_sizes
            ],
        }

    @classmethod
    def from_json(cls, data):
        """Return the :class:`Requirements` that :meth:`to_json` returned ``data`` for."""

        return cls(
            tuple(data["parameters"]),
            tuple(map(tuple, data["ndims"])),
            tuple(tuple(map(tuple, group)) for group in data["equal_sizes"]),
        )


def requirements(source, kernel_name, launch_name):
    """Read what the launch function ``launch_name`` requires of its arguments from NineToothed's ``source``.

    :param source: ``str``, NineToothed's generated module (the CUDA
        variant), or that module parsed (``ast.Module``, which is only read).
    :param kernel_name: ``str``, the ``triton.jit`` kernel it launches.
    :param launch_name: ``str``.
    :return: :class:`Requirements`, or ``None`` when the source does not have
        the structure NineToothed generates (then nothing is checked).
    """

    module = ast.parse(source) if isinstance(source, str) else source
    functions = {
        node.name: node for node in module.body if isinstance(node, ast.FunctionDef)
    }
    launch, kernel = functions.get(launch_name), functions.get(kernel_name)

    if launch is None or kernel is None or launch.args.vararg or launch.args.kwarg:
        return None

    parameters = tuple(argument.arg for argument in launch.args.args)
    # ``kernel[grid](*arguments)``: the one call of a subscripted kernel.
    calls = [
        node
        for node in walk(launch)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
    ]

    if len(calls) != 1:
        return None

    # The launch passes ``t.size(i)`` to the kernel directly or through a
    # local (constexpr sizes are bound to names first).
    local_sizes = {
        node.targets[0].id: _size_call(node.value, parameters)
        for node in launch.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and _size_call(node.value, parameters) is not None
    }
    sizes = {}  # kernel parameter name -> (launch parameter index, dimension)

    for name, value in zip(kernel.args.args, calls[0].args):
        size = _size_call(value, parameters)

        if size is None and isinstance(value, ast.Name):
            size = local_sizes.get(value.id)

        if size is not None:
            sizes[name.arg] = size

    ndims = _ndims(launch, parameters)
    checked_parameters = {index for index, _ in ndims}
    equal_sizes = tuple(
        group
        for group in _equal_sizes(kernel, sizes)
        if checked_parameters.issuperset(index for index, _ in group)
    )

    return Requirements(parameters, ndims, equal_sizes)


def requirements_fact(source, kernel_name, launch_name):
    """:func:`requirements` as a cache entry keeps it (``Entry.launch["requirements"]``).

    :param source: as :func:`requirements`: text, or the module parsed.
    :return: ``Requirements.to_json()``, or ``None`` when the source does not
        have the structure NineToothed generates (nothing is checked).
    """

    required = requirements(source, kernel_name, launch_name)

    return required.to_json() if required is not None else None


def _ndims(launch, parameters):
    # NineToothed passes the size and stride of every dimension of a tensor
    # parameter. A parameter the launch asks anything else (a jagged
    # tensor's ``offsets()``) is not checked.
    highest, other = {}, set()

    for node in walk(launch):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in parameters
        ):
            continue

        index = parameters.index(node.func.value.id)

        if (
            node.func.attr in ("size", "stride")
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
            and type(node.args[0].value) is int
        ):
            highest[index] = max(highest.get(index, 0), node.args[0].value + 1)
        else:
            other.add(index)

    return tuple(sorted((i, n) for i, n in highest.items() if i not in other))


def _size_call(node, parameters):
    # ``t.size(i)`` with ``t`` a launch parameter and ``i`` a constant.
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "size"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in parameters
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, int)
    ):
        return parameters.index(node.func.value.id), node.args[0].value

    return None


def _equal_sizes(kernel, sizes):
    assigned = {
        node.targets[0].id: node.value
        for node in kernel.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    }
    groups = {}
    keys = {}

    # The offsets compared by their fields (``structure``), not their text:
    # formatting them, and walking the kernel's every node in order to find
    # its comparisons: softmax's requirements took 1.35 ms, now 1.0
    # (docs/benchmarks.md, "Session 14"). The groups are sorted, so that
    # the order comparisons are found in does not matter.
    for node in find(kernel, ast.Compare):
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], ast.Lt)
            and isinstance(node.comparators[0], ast.Name)
            and node.comparators[0].id in sizes
        ):
            offsets = _offsets_key(node.left, assigned, keys)
            groups.setdefault(offsets, set()).add(sizes[node.comparators[0].id])

    return tuple(
        sorted(
            tuple(sorted(group))
            for group in groups.values()
            if len({index for index, _ in group}) > 1
        )
    )


def _offsets_key(node, assigned, keys, depth=0):
    # ``structure`` of ``node`` with the kernel's index variables replaced by
    # what they were assigned, itself substituted one level deeper (bounded:
    # generated index variables are a few levels deep). ``keys`` holds each
    # variable's key per level, found once and shared by every comparison
    # that reads it (a kernel's masks are built from the same few
    # variables): building each substituted expression, then its key, took
    # half of softmax's requirements (docs/benchmarks.md, "Session 19").
    def replace(inner):
        if inner.__class__ is not ast.Name or depth > 8 or inner.id not in assigned:
            return None

        key = keys.get((inner.id, depth))

        if key is None:
            key = keys[(inner.id, depth)] = _offsets_key(
                assigned[inner.id], assigned, keys, depth + 1
            )

        return key

    return structure(node, replace)


def requested(variant):
    """Whether launches of ``variant`` (``"cuda"``, ``"npu"``, ``"cpu"``) are checked.

    The NPU and CPU variants always are; the CUDA variant keeps NineToothed's
    behaviour unless ``$NINETOOTHED_ASCEND_CHECK_ARGS`` is ``1``.
    """

    return variant != "cuda" or os.environ.get(CHECK_VARIABLE) == "1"


def checked(launch, required, kernel_name, variant):
    """Return ``launch`` behind a check of its arguments against ``required``.

    :param launch: the launch function of a variant.
    :param required: :class:`Requirements`.
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


__all__ = [
    "CHECK_VARIABLE",
    "Requirements",
    "checked",
    "requested",
    "requirements",
    "requirements_fact",
]
