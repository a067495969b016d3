"""Which summands of a flattened access's address are the digits of one flat index.

NineToothed's ``flatten``/``ravel`` address a tile through the digits of
its flat index ``L`` (``L // (s1 * s2) * t0 + L % (s1 * s2) // s2 * t1 +
...``). :func:`digit_groups` finds such groups and proves them digits by
evaluating them on sizes (:func:`equals_on_sizes`), never by executing the
kernel's text; :func:`scalar_accesses` says which flattened accesses of a
kernel stay gathers. ``ContiguousFlatAccess`` rewrites what they find, and
``TransposeStridedTiles`` reads the groups of its flags.
"""

import ast
import dataclasses
import itertools
import operator

from ninetoothed_ascend.compiler.generated import GeneratedModule
from ninetoothed_ascend.compiler.passes import Pass, holds_arange
from ninetoothed_ascend.compiler.syntax import (
    assignments,
    binds_directly,
    clone,
    same,
    structure,
    summands,
    walk,
)

#: Why :func:`scalar_accesses` keeps a sliding-window access a gather.
WINDOW = (
    "sliding window: one dimension indexed by a digit of the tile's rows plus "
    "a digit of its window lanes (pooling, im2col), affine in arange for no layout"
)


@dataclasses.dataclass
class DigitGroup:
    """The summands of an address that are digits of one flat index ``L``.

    :param flat_index: ``ast`` expression ``L``.
    :param terms: the ``X * t`` summands (``ast.BinOp``), outermost dimension first.
    :param digits: each term's digit, the ``//``/``%`` chain over ``L`` in its ``X``.
    :param offsets: each term's other summands of ``X`` (``list`` of ``ast``
        expressions free of ``arange``: one index per program).
    :param strides: the stride parameter names ``t``, in the same order.
    :param size_arguments: the launch's ``T.size(k)`` expressions, same order.
    :param stride_arguments: the launch's ``T.stride(k)`` expressions, same order.
    :param size_parameters: the kernel parameters the launch passes ``T.size(k)`` to, same order.
    """

    flat_index: ast.expr
    terms: list
    digits: list
    offsets: list
    strides: list
    size_arguments: list
    stride_arguments: list
    size_parameters: list

    def key(self):
        return structure(self.size_arguments + self.stride_arguments)


def digit_groups(owner, pointer, arguments):
    """Yield the :class:`DigitGroup` of a ``load``/``store`` pointer expression that are proven digits.

    :param owner: the :class:`~ninetoothed_ascend.compiler.passes.Pass` whose imports resolve ``arange``.
    :param pointer: ``ast`` expression, the pointer argument.
    :param arguments: ``dict`` kernel parameter name -> the launch's argument expression.
    """

    candidates = {}

    for term in summands(pointer):
        digit = _digit_term(owner, term, arguments)

        if digit is not None:
            candidates.setdefault(structure(digit.flat_index), []).append(digit)

    for members in candidates.values():
        if len(members) < 2:
            continue

        strides = [member.stride for member in members]
        stride_arguments = [arguments[stride] for stride in strides]
        size_arguments = [_size_of(argument) for argument in stride_arguments]
        size_parameters = [
            _parameter_passed(arguments, argument) for argument in size_arguments
        ]

        if None in size_parameters:
            continue

        group = DigitGroup(
            members[0].flat_index,
            [member.term for member in members],
            [member.digit for member in members],
            [member.offsets for member in members],
            strides,
            size_arguments,
            stride_arguments,
            size_parameters,
        )

        if _are_digits(group, size_parameters):
            yield group


def scalar_accesses(source):
    """The loads and stores of a generated module whose addresses stay a gather on Ascend after the fast path.

    An address stays a gather when a ``//`` or ``%`` of an ``arange`` term
    is not a digit of a flattened tensor (a permutation, a diagonal), or when
    it reads a block loaded from another tensor (an index tensor read along
    the tile; one index per program, such as a block table entry, leaves the
    tile affine: measured, 0 ``DiscreteMemAccess`` in paged_attention and
    reshape_and_cache, bench/discrete_access.py): neither is affine in
    ``arange`` for any layout, so ``triton-adapter-opt`` lowers it to a scalar
    loop (``DiscreteMemAccess``).

    :param source: ``str``, a module as NineToothed generates it.
    :return: ``list`` of ``(kernel name, "load" | "store", why)``.
    """

    module = GeneratedModule(ast.parse(source))
    # Only resolves names through the imports: no target facts are read.
    owner = Pass(target=None)
    owner.aliases = module.aliases
    found = []

    for kernel in module.kernels().values():
        loaded = {
            name
            for name, bindings in assignments(kernel).items()
            if any(
                binding.__class__ is ast.Assign
                and binds_directly(binding, name)
                and any(_is_block_load(owner, node) for node in walk(binding.value))
                for binding in bindings
            )
        }

        for call in walk(kernel):
            if not (
                owner.is_call_to(call, "triton.language.load", "triton.language.store")
                and call.args
            ):
                continue

            kind = owner.resolve(call.func).rsplit(".", 1)[1]
            pointer = call.args[0]
            names = {node.id for node in walk(pointer) if isinstance(node, ast.Name)}

            if names & loaded or any(
                _is_block_load(owner, node) for node in walk(pointer)
            ):
                found.append(
                    (kernel.name, kind, "address read from a loaded tensor (an index)")
                )
            elif any(_is_window(owner, term) for term in summands(pointer)):
                found.append((kernel.name, kind, WINDOW))
            elif any(
                isinstance(node, ast.BinOp)
                and isinstance(node.op, (ast.FloorDiv, ast.Mod))
                and holds_arange(owner, node)
                and not _in_digit_group(owner, node, pointer)
                for node in walk(pointer)
            ):
                found.append(
                    (
                        kernel.name,
                        kind,
                        "// or % of arange that is not a flattened digit",
                    )
                )

    return found


def _is_block_load(owner, node):
    # A load of one element per program (a block table entry, an offset)
    # leaves the tile's address affine; one that varies along the tile does not.
    return (
        owner.is_call_to(node, "triton.language.load")
        and bool(node.args)
        and any(
            owner.is_call_to(inner, "triton.language.arange")
            and not (
                len(inner.args) == 2
                and isinstance(inner.args[1], ast.Constant)
                and inner.args[1].value == 1
            )
            for inner in walk(node.args[0])
        )
    )


def _is_window(owner, term):
    """Whether ``term`` (``X * t``) indexes one dimension with ``//``/``%`` of ``arange`` along two tile axes.

    A sliding window (pooling, im2col): the dimension's index is a digit of
    the tile's row index plus a digit of its column (window) index.
    """

    if not (isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult)):
        return False

    axes = {
        structure(node.slice)
        for node in walk(term.left)
        if isinstance(node, ast.Subscript)
        and owner.is_call_to(node.value, "triton.language.arange")
    }

    return len(axes) > 1 and any(
        isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod))
        for node in walk(term.left)
    )


def _in_digit_group(owner, node, pointer):
    for term in summands(pointer):
        if any(inner is node for inner in walk(term)):
            return _digit_term(owner, term, None) is not None

    return False


@dataclasses.dataclass
class _DigitTerm:
    term: ast.BinOp
    flat_index: ast.expr
    digit: ast.expr
    offsets: list
    stride: str


def _digit_term(owner, term, arguments):
    """A :class:`_DigitTerm` when ``term`` is ``(D + o ...) * t``, ``D`` a ``//``/``%`` chain over ``L`` and the ``o`` free of ``arange``, else ``None``.

    NineToothed adds the index of an outer tile level to each digit
    (``index_1 % 1`` where ``tile((B, -1))`` leaves a level of size 1): a
    scalar per program, which keeps the sum affine.
    """

    if not (
        isinstance(term, ast.BinOp)
        and isinstance(term.op, ast.Mult)
        and isinstance(term.right, ast.Name)
        and (arguments is None or term.right.id in arguments)
    ):
        return None

    varying = []
    offsets = []

    for summand in summands(term.left):
        (varying if holds_arange(owner, summand) else offsets).append(summand)

    if len(varying) != 1:
        return None

    digit, steps = varying[0], 0

    while isinstance(digit, ast.BinOp) and isinstance(
        digit.op, (ast.FloorDiv, ast.Mod)
    ):
        if not _is_size_expression(digit.right):
            return None

        digit, steps = digit.left, steps + 1

    if steps == 0 or not holds_arange(owner, digit):
        return None

    return _DigitTerm(term, digit, varying[0], offsets, term.right.id)


def _is_size_expression(node):
    """Integer arithmetic of names and constants, as NineToothed writes a divisor (``(s1 - 1 + 1) * s2``)."""

    if isinstance(node, ast.Name):
        return True

    if isinstance(node, ast.Constant):
        return isinstance(node.value, int)

    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv))
        and _is_size_expression(node.left)
        and _is_size_expression(node.right)
    )


def _size_of(stride_argument):
    """``T.size(k)`` for the launch's ``T.stride(k)``, or ``None``."""

    if (
        isinstance(stride_argument, ast.Call)
        and isinstance(stride_argument.func, ast.Attribute)
        and stride_argument.func.attr == "stride"
    ):
        return ast.Call(
            ast.Attribute(stride_argument.func.value, "size", ast.Load()),
            stride_argument.args,
            stride_argument.keywords,
        )

    return None


def _parameter_passed(arguments, expression):
    if expression is None:
        return None

    for parameter, argument in arguments.items():
        if same(argument, expression):
            return parameter

    return None


def _are_digits(group, size_parameters):
    """Whether the group's digit expressions are the row-major digits of ``L`` over the sizes.

    Evaluated on every ``L < prod(sizes)`` for every tuple of sizes in
    ``{1, 2, 3}``: a divisor that is not the product of the later sizes, or
    a digit taken in the wrong order, fails on one of them.
    """

    flat = ast.Name("ninetoothed_ascend_flat_index", ast.Load())
    digits = [
        _arithmetic(
            _substitute(digit, group.flat_index, flat), {*size_parameters, flat.id}
        )
        for digit in group.digits
    ]

    if None in digits:
        return False

    for scope in _size_scopes(size_parameters):
        sizes = [scope[name] for name in size_parameters]
        weights = [1] * len(sizes)

        for k in range(len(sizes) - 2, -1, -1):
            weights[k] = weights[k + 1] * sizes[k + 1]

        for index in range(weights[0] * sizes[0]):
            scope[flat.id] = index
            values = [digit(scope) for digit in digits]

            if (
                None in values
                or [index // weight % size for weight, size in zip(weights, sizes)]
                != values
            ):
                return False

    return True


#: The operators of a size or digit expression (``(s1 - 1 + 1) * s2``, ``L // s2 % s1``).
_BINARY_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


_UNARY_OPERATORS = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def _arithmetic(expression, names):
    """``expression`` as a function of a scope (``dict`` name -> ``int``), or ``None`` where it is more than integer arithmetic of ``names``.

    The pass proves facts about the text it rewrites, which may come from a
    manifest or a cache entry: it evaluates integer constants, the names in
    ``names`` and ``+ - * // %`` through :data:`_BINARY_OPERATORS`, and
    nothing else (no attribute, subscript or call), so no part of the text
    is executed. The function returns ``None`` where an operation fails
    (a division by zero).
    """

    def build(node):
        if isinstance(node, ast.Name):
            if node.id not in names:
                return None

            return lambda scope, name=node.id: scope[name]

        if isinstance(node, ast.Constant) and type(node.value) is int:
            return lambda scope, value=node.value: value

        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPERATORS:
            left, right = build(node.left), build(node.right)

            if left is None or right is None:
                return None

            apply = _BINARY_OPERATORS[type(node.op)]

            return lambda scope: apply(left(scope), right(scope))

        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY_OPERATORS:
            operand = build(node.operand)

            if operand is None:
                return None

            apply = _UNARY_OPERATORS[type(node.op)]

            return lambda scope: apply(operand(scope))

        return None

    try:
        evaluate = build(expression)
    except RecursionError:
        return None

    if evaluate is None:
        return None

    def guarded(scope):
        try:
            return evaluate(scope)
        except (ZeroDivisionError, RecursionError):
            return None

    return guarded


def _size_scopes(size_parameters):
    for sizes in itertools.product((1, 2, 3), repeat=len(size_parameters)):
        yield dict(zip(size_parameters, sizes))


def equals_on_sizes(expression, expected, size_parameters):
    """Whether ``expression`` (``ast``) equals ``expected(sizes)`` for every tuple of sizes in ``{1, 2, 3}``."""

    evaluate = _arithmetic(expression, set(size_parameters))

    return evaluate is not None and all(
        (value := evaluate(scope)) is not None
        and value == expected([scope[name] for name in size_parameters])
        for scope in _size_scopes(size_parameters)
    )


def _substitute(node, old, new):
    class Replace(ast.NodeTransformer):
        def visit(self, inner):
            if same(inner, old):
                return new

            return self.generic_visit(inner)

    return Replace().visit(clone(node))
