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
  kernel's index variables, and with each tensor's own sizes standing for
  its dimensions: a 2-D tile's row index divides the program id by the
  number of its own column tiles) address the same elements, so their
  sizes must be equal: a shorter one would be read as padding.
- **matching element counts**: a flattened tensor is masked by
  ``offsets < size_0 * size_1 * ...``; tensors flattened alike must have as
  many elements.
- **tensors**: every tensor parameter is a ``torch.Tensor`` (a NumPy array
  has ``shape`` but no ``size(i)``) of a dtype Triton has a type for (no
  complex), whose element offsets stay below 2**31 (Triton computes them in
  32 bits: beyond, they wrap, and the interpreter reads outside the tensor).
- **data**: a ``meta`` tensor (no data) is accepted where the kernel
  neither loads nor stores the tensor (a placeholder, as plain NineToothed
  accepts it), and refused where it does.

Meta tensors (``device="meta"``) have shapes and are checked like any other;
no check reads data. Dtypes are not checked beyond Triton's own types:
NineToothed's source does not say which dtypes a kernel accepts.
"""

import ast
import dataclasses
import functools
import os

import torch

from ninetoothed_ascend.compiler.syntax import find, structure, walk

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


@dataclasses.dataclass(frozen=True)
class Requirements:
    """What a kernel's launch requires of its arguments.

    :param parameters: ``tuple`` of ``str``, the launch function's parameters.
    :param ndims: ``tuple`` of ``(parameter index, ndim)`` for each tensor parameter.
    :param equal_sizes: ``tuple`` of groups, each a ``tuple`` of
        ``(parameter index, dimension)`` whose sizes must be equal.
    :param equal_numels: ``tuple`` of groups, each a ``tuple`` of parameter
        indices of tensors (flattened alike) whose element counts must be
        equal.
    :param accessed: ``tuple`` of the parameter indices of the tensors the
        kernel loads or stores (a ``meta`` tensor, which has no data, is
        refused there).
    """

    parameters: tuple
    ndims: tuple
    equal_sizes: tuple
    equal_numels: tuple = ()
    accessed: tuple = ()

    def to_json(self):
        """Return the fields as JSON lists (``dict``), as a cache entry's ``launch`` stores them."""

        return {
            "parameters": list(self.parameters),
            "ndims": [list(pair) for pair in self.ndims],
            "equal_sizes": [
                [list(pair) for pair in group] for group in self.equal_sizes
            ],
            "equal_numels": [list(group) for group in self.equal_numels],
            "accessed": list(self.accessed),
        }

    @classmethod
    def from_json(cls, data):
        """Return the :class:`Requirements` that :meth:`to_json` returned ``data`` for."""

        return cls(
            tuple(data["parameters"]),
            tuple(map(tuple, data["ndims"])),
            tuple(tuple(map(tuple, group)) for group in data["equal_sizes"]),
            tuple(tuple(group) for group in data.get("equal_numels", ())),
            tuple(data.get("accessed", ())),
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
    equal_sizes, equal_numels = _equal_sizes(kernel, sizes, dict(ndims))
    equal_sizes = tuple(
        group
        for group in equal_sizes
        if checked_parameters.issuperset(index for index, _ in group)
    )
    equal_numels = tuple(
        group for group in equal_numels if checked_parameters.issuperset(group)
    )
    accessed = _accessed(kernel, calls[0], parameters, checked_parameters)

    return Requirements(parameters, ndims, equal_sizes, equal_numels, accessed)


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


def _equal_sizes(kernel, sizes, ndims):
    # ``(equal_sizes, equal_numels)``: the groups of Requirements.
    assigned = {
        node.targets[0].id: node.value
        for node in kernel.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    }
    groups = {}
    numels = {}
    # In the index variables (what the program id selects), each tensor's
    # own sizes stand for its dimensions: a 2-D tile's row index divides the
    # program id by its own number of column tiles, and tiles of two tensors
    # line up where those sizes are equal, which their own groups require.
    # Not in a comparison's own offsets: a flattened tensor's per-dimension
    # offsets divide its flat offsets by its sizes, and two tensors of one
    # element count but other shapes still read the same flat elements.
    keys = {(name, "index"): ("size", size[1]) for name, size in sizes.items()}

    # The offsets compared by their fields (``structure``), not their text,
    # which is cheaper than formatting them. The groups are sorted, so that
    # the order comparisons are found in does not matter.
    for node in find(kernel, ast.Compare):
        if len(node.ops) != 1 or not isinstance(node.ops[0], ast.Lt):
            continue

        bound = node.comparators[0]

        if isinstance(bound, ast.Name) and bound.id in sizes:
            offsets = _offsets_key(node.left, assigned, keys)
            groups.setdefault(offsets, set()).add(sizes[bound.id])
            continue

        # ``offsets < size_0 * size_1 * ...`` of every dimension of one
        # tensor: a flattened tensor's element count.
        factors = _product_names(bound)
        owners = {sizes[name][0] for name in factors if name in sizes}

        if (
            factors
            and all(name in sizes for name in factors)
            and len(owners) == 1
            and sorted(sizes[name][1] for name in factors)
            == list(range(ndims.get(next(iter(owners)), -1)))
        ):
            offsets = _offsets_key(node.left, assigned, keys)
            numels.setdefault(offsets, set()).update(owners)

    return (
        tuple(
            sorted(
                {
                    tuple(sorted(group))
                    for group in groups.values()
                    if len({index for index, _ in group}) > 1
                }
            )
        ),
        tuple(
            sorted(tuple(sorted(group)) for group in numels.values() if len(group) > 1)
        ),
    )


def _product_names(node):
    # The names multiplied in ``a * b * ...``; ``[]`` if it is anything else.
    if isinstance(node, ast.Name):
        return [node.id]

    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = _product_names(node.left), _product_names(node.right)

        return left + right if left and right else []

    return []


def _accessed(kernel, call, parameters, tensors):
    # The launch parameters whose pointer, passed as the kernel's argument,
    # reaches (through names assigned from it: NineToothed's ``x_pointers =
    # x_pointer``, a loaded value) an expression other than an assignment,
    # outside any ``if``: a load, a store that every launch runs. An unused
    # tensor's pointer is only assigned.
    pointers = {
        parameter.arg: parameters.index(argument.id)
        for parameter, argument in zip(kernel.args.args, call.args)
        if isinstance(argument, ast.Name)
        and argument.id in parameters
        and parameters.index(argument.id) in tensors
    }
    derived = dict(pointers)
    assignments = [
        node
        for node in walk(kernel)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ]
    changed = True

    while changed:
        changed = False

        for node in assignments:
            target = node.targets[0].id

            if target in derived:
                continue

            for inner in walk(node.value):
                if isinstance(inner, ast.Name) and inner.id in derived:
                    derived[target] = derived[inner.id]
                    changed = True
                    break

    propagating = {id(inner) for node in assignments for inner in walk(node.value)}
    # An access under an ``if`` may not run (a constexpr flag that says
    # whether an optional tensor was passed): it does not count.
    propagating.update(
        id(inner)
        for node in walk(kernel)
        if isinstance(node, (ast.If, ast.IfExp))
        for branch in (node.body, node.orelse)
        for statement in (branch if isinstance(branch, list) else [branch])
        for inner in walk(statement)
    )

    return tuple(
        sorted(
            {
                derived[node.id]
                for node in walk(kernel)
                if isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Load)
                and node.id in derived
                and id(node) not in propagating
            }
        )
    )


def _offsets_key(node, assigned, keys, depth=0):
    # ``keys`` holds, under ``(name, "index")``, what a size parameter stands
    # for inside index variables (depth 1 on). ``structure`` of ``node`` with the kernel's index variables replaced by
    # what they were assigned, itself substituted one level deeper (bounded:
    # generated index variables are a few levels deep). ``keys`` holds each
    # variable's key per level, found once and shared by every comparison
    # that reads it (a kernel's masks are built from the same few
    # variables).
    def replace(inner):
        if inner.__class__ is not ast.Name:
            return None

        key = keys.get((inner.id, "index")) if depth else None

        if key is not None:
            return key

        if depth > 8 or inner.id not in assigned:
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


__all__ = [
    "CHECK_VARIABLE",
    "Requirements",
    "checked",
    "requested",
    "requirements",
    "requirements_fact",
]
