"""What a kernel's launch function takes and requires of its arguments, read from NineToothed's generated module.

The analysis of the launch is the compiler's, made from a parse the
compiler makes anyway: the tree of the first pipeline that builds a variant
of the kernel (:func:`~ninetoothed_ascend.compiler.passes.run_pipeline`'s
``analyse``, before any pass), or, where a ``make`` builds only the CUDA
variant (NineToothed's source, no pipeline), one parse of that source
(:func:`read_launch_facts`). It is stored with the kernel's cache entry
(``Entry.launch``, :func:`launch_facts`), so that neither a handle nor a
launch reads any source: the handle's ``__call__`` is written for the
parameters (``jit/dispatch.py``) and its launches are checked against the
requirements (``jit/arguments.py``).

What is required is read from NineToothed's generated source, never from
names:

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
- **data**: a ``meta`` tensor (no data) is accepted where the kernel
  neither loads nor stores the tensor (a placeholder, as plain NineToothed
  accepts it), and refused where it does.

Dtypes are not required: NineToothed's source does not say which dtypes a
kernel accepts.
"""

import ast
import dataclasses

from ninetoothed_ascend.compiler.syntax import find, single_assignments, structure, walk


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


def launch_facts(module, kernel_name, launch_name):
    """What a kernel's handles and launches need to know about its launch function, as its cache entry keeps it (``Entry.launch``).

    :param module: ``ast.Module``, NineToothed's generated module parsed
        (only read).
    :param kernel_name: ``str``, the ``triton.jit`` kernel it launches.
    :param launch_name: ``str``, the launch function.
    :return: ``dict`` with ``parameters`` and ``tensors`` (from
        :func:`launch_parameters`; ``None`` and ``[]`` when it cannot tell)
        and ``requirements`` (:meth:`Requirements.to_json` of
        :func:`requirements`, or ``None`` where nothing is checked).
    """

    parameters = launch_parameters(module, launch_name)
    required = requirements(module, kernel_name, launch_name)

    return {
        "parameters": list(parameters[0]) if parameters is not None else None,
        "tensors": list(parameters[1]) if parameters is not None else [],
        "requirements": required.to_json() if required is not None else None,
    }


def read_launch_facts(source, kernel_name, launch_name):
    """:func:`launch_facts` of NineToothed's ``source`` (``str``), parsed here: for a kernel no pipeline has parsed."""

    return launch_facts(ast.parse(source), kernel_name, launch_name)


def launch_parameters(module, launch_name):
    """Read the parameters of the launch function ``launch_name`` of ``module`` (``ast.Module``).

    NineToothed's launch function passes every tensor parameter with its
    ``.size(i)`` and ``.stride(i)``; scalar parameters (``Tensor(0)``) are
    passed as they are. So a parameter is a tensor exactly when the function
    calls ``.size`` or ``.stride`` on it.

    :return: ``(parameters, tensor_parameters)``: ``tuple`` of ``str``, all
        the parameters, and those that are tensors; ``None`` if the function
        is not found or takes ``*args`` or ``**kwargs``.
    """

    function = _functions(module).get(launch_name)

    if function is None:
        return None

    signature = function.args

    if signature.vararg or signature.kwarg or signature.kwonlyargs:
        return None

    names = [argument.arg for argument in signature.args]
    tensors = {
        node.func.value.id
        for node in walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("size", "stride")
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in names
    }

    return tuple(names), tuple(name for name in names if name in tensors)


def requirements(module, kernel_name, launch_name):
    """Read what the launch function ``launch_name`` requires of its arguments from NineToothed's ``module``.

    :param module: ``ast.Module``, NineToothed's generated module (the CUDA
        variant) parsed; only read.
    :param kernel_name: ``str``, the ``triton.jit`` kernel it launches.
    :param launch_name: ``str``.
    :return: :class:`Requirements`, or ``None`` when the source does not have
        the structure NineToothed generates (then nothing is checked).
    """

    functions = _functions(module)
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


def _functions(module):
    # The module-level functions by name, the first of a name kept.
    functions = {}

    for node in module.body:
        if isinstance(node, ast.FunctionDef):
            functions.setdefault(node.name, node)

    return functions


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
    # An index variable stands for what it was assigned only where it is
    # assigned once.
    assigned = single_assignments(kernel)
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
