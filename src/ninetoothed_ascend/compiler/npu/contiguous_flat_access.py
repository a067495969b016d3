"""Give flattened accesses a contiguous fast path, decided at the launch."""

import ast
import dataclasses
import math
import typing

from ninetoothed_ascend.compiler.facts import FLAT_ACCESS_FLAGS
from ninetoothed_ascend.compiler.generated import launch_arguments
from ninetoothed_ascend.compiler.npu.flat_index_digits import (
    digit_groups,
    equals_on_sizes,
)
from ninetoothed_ascend.compiler.passes import Pass, arange_positions
from ninetoothed_ascend.compiler.syntax import (
    insert_after_imports,
    keyword,
    operands,
    same,
    single_assignments,
    structure,
    summands,
    walk,
)

#: The launch-side test, added to the module when an access was given a fast path.
COLLAPSES = "ninetoothed_ascend_collapses"

COLLAPSES_SOURCE = f'''
def {COLLAPSES}(sizes, strides):
    """Whether digits of a row-major index over ``sizes``, times ``strides``, sum to the index times ``strides[-1]``."""

    step = strides[-1]

    for size, stride in zip(reversed(sizes), reversed(strides)):
        # A dimension of size 1 has digit 0 whatever its stride.
        if size != 1 and stride != step:
            return False

        step *= size

    return True
'''


#: Prefix of the constexpr parameter that selects the fast path of one flattened access.
FLAG_PREFIX = "ninetoothed_ascend_flat_affine_"


class ContiguousFlatAccess(Pass):
    """Make flattened addresses affine in ``arange`` when the launch finds the layout collapsible.

    Constraint: ``triton-adapter-opt`` lowers a load or store whose addresses
    are not an affine function of ``arange`` to a scalar loop, one element per
    iteration (``DiscreteMemAccess`` in the ``ttadapter`` output), and BiShengIR
    then gives each element a 32-byte UB block (measured with ascendnpu-ir 1.2.0,
    docs/ascend.md, "BiShengIR without an NPU").
    NineToothed's ``flatten``/``ravel`` address a tile through the digits of
    the flat index ``L = index * B + arange(0, B)``:
    ``L // (s1 * s2) * t0 + L % (s1 * s2) // s2 * t1 + L % (s1 * s2) % s2 * t2``;
    the ``//`` and ``%`` make it a gather even for a contiguous tensor.

    Rewrite: such a group of terms becomes
    ``L * t2 if FLAG else <the group>``, ``FLAG`` a new constexpr parameter
    that the launch function sets to ``ninetoothed_ascend_collapses(sizes,
    strides)`` of the tensor's flattened dimensions. Where ``t_k = t2 * (the
    product of the sizes after k)`` for every dimension of size above 1, the
    two are equal for every ``L`` (mixed-radix digits), so a contiguous call
    and a strided one compile as two specializations and both compute what
    the CUDA variant computes.

    NineToothed also bounds every digit in the mask (``L // (s1 * s2) < s0``,
    ``... >= 0``), vector integer divisions that BiShengIR gives UB buffers
    (measured: 68 bytes per element of a contiguous fp16-to-fp32 cast at
    16384 lanes, a UB overflow). Where the same mask bounds ``L`` itself
    (``L < s0 * s1 * s2`` and a lower bound ``>= 0`` of ``L`` or of a part of
    it), the digit bounds follow from it, and the fast path's mask leaves
    them out: ``mask=A if FLAG else <the mask>``.

    Matched by structure: in a ``load``/``store`` pointer, the summands
    ``X * t`` whose ``X`` is ``L`` under one or more ``//``/``%`` by integer
    arithmetic of kernel parameters (``(s1 - 1 + 1) * s2``), plus any
    summands free of ``arange`` (the index of an outer tile level, one per
    program: pooling outputs tiled ``(1, 1, 1, 1)`` then ``(B, -1)`` add
    ``pid % 1``), ``L`` holding ``arange``, grouped by ``L``; the launch
    passes ``T.stride(k)`` for each ``t`` and ``T.size(k)`` for the
    divisors, directly or through a name the launch function binds once to
    it (a constexpr shape: ntops' ``max`` over every element, 9 launches
    from a scalar loop to a DMA). The group is rewritten only when its terms, evaluated on every
    index of every size tuple in ``{1, 2, 3}`` per dimension, are exactly the
    digits (so an address through an index tensor, a permutation, a sliding
    window or any other non-digit form is left as it is: see
    :func:`~ninetoothed_ascend.compiler.npu.flat_index_digits.scalar_accesses`). The fast path adds the offsets times their
    strides, leaving out those that are 0 for every integer (``x % 1``, and
    names assigned once to such an expression), and leaves out a digit's
    bounds (``D + offsets < s_k``, ``>= 0``) only where those offsets are 0.

    Each flag is published as a :class:`FlatAccessFlag` under
    :data:`~ninetoothed_ascend.compiler.facts.FLAT_ACCESS_FLAGS`: the later
    passes and the UB model learn from it which parameter decides which
    accesses, not from the rewritten addresses.

    :Constraint: `triton-adapter-opt` lowers an address that is not affine in
        `arange` to a scalar loop (`DiscreteMemAccess`), and BiShengIR gives
        each element a 32-byte UB block; NineToothed's `flatten`/`ravel`
        address a tile through the digits of the flat index (`L // (s1 * s2) *
        t0 + L % (s1 * s2) // s2 * t1 + ...`), a gather even for a contiguous
        tensor
    :Source: measured, docs/ascend.md, "BiShengIR without an NPU";
        `bench/discrete_access.py`, docs/benchmarks.md;
        `tests/compiler/npu/test_contiguous_flat_access.py`
    :Rewrites: the summands that are proven digits of one `L` (evaluated on
        every index of every size tuple in {1, 2, 3}; divisors any integer
        arithmetic of sizes, such as `s - 1 + 1`), each plus per-program
        offsets free of `arange` (pooling outputs add `pid % 1`), become `L *
        t_inner + offsets * strides if FLAG else <them>` (offsets 0 for every
        integer, `x % 1`, left out), and the mask's digit bounds (`D < s_k`, `D
        >= 0`, checked against the digit's size), implied by its `L < s0 * s1 *
        ...`, are left out under `FLAG`; `FLAG` is a new constexpr parameter
        the launch function sets to `ninetoothed_ascend_collapses(sizes,
        strides)`, so a collapsible and a strided call compile as two
        specializations; a store's `FLAG` also asks for a unit stride on its
        tile's innermost axis (conv2d's NCHW output, an `(N * P * Q, K)` tile
        whose filters step `P * Q`: as a DMA, 2 of 8 fp16 configs of batch 1
        reached `hivmc`, as the scalar store 8 of 8; `TransposeStridedTiles`
        stores it transposed)
    """

    def run(self, tree, module=None):
        self._flags = {}
        # Flag name -> its accesses, ``[(call, group)]``, for the fact.
        self._accesses = {}

        return super().run(tree, module)

    def visit_Module(self, node):
        for kernel, launch_call in self.module.launches():
            self._rewrite_kernel(kernel, launch_call)

        return node

    def _rewrite_kernel(self, kernel, launch_call):
        arguments = launch_arguments(kernel, launch_call)
        launcher = self.module.launch_function(launch_call)

        if launcher is not None:
            # A size the launch binds to a name first (a constexpr shape:
            # ``S = T.size(1)``, then ``S`` passed) is that size.
            bound = single_assignments(launcher)
            arguments = {
                parameter: bound.get(argument.id, argument)
                if argument.__class__ is ast.Name
                else argument
                for parameter, argument in arguments.items()
            }
        zeros = _zero_names(kernel)

        for call in walk(kernel):
            if not (
                self.is_call_to(call, "triton.language.load", "triton.language.store")
                and call.args
            ):
                continue

            is_store = self.is_call_to(call, "triton.language.store")

            for group in digit_groups(self, call.args[0], arguments):
                unit_strides = (
                    _innermost_stride_arguments(self, call.args[0], group, arguments)
                    if is_store
                    else []
                )
                flag = self._flag(kernel, launch_call, group, unit_strides)
                self._accesses[flag.name].append((call, group))
                mask = keyword(call, "mask")

                if mask is not None:
                    mask.value = _drop_digit_bounds(mask.value, group, flag.name, zeros)

                call.args[0] = _replace_group(call.args[0], group, flag.name, zeros)
                self.rewrote()

    def _flag(self, kernel, launch_call, group, unit_strides):
        key = (
            id(kernel),
            group.key(),
            structure(list(unit_strides)),
        )

        if key not in self._flags:
            name = f"{FLAG_PREFIX}{len(self._flags)}"
            kernel.args.args.append(
                ast.arg(name, ast.parse("triton.language.constexpr", mode="eval").body)
            )
            collapses = ast.Call(
                ast.Name(COLLAPSES, ast.Load()),
                [
                    ast.Tuple(list(group.size_arguments), ast.Load()),
                    ast.Tuple(list(group.stride_arguments), ast.Load()),
                ],
                [],
            )
            test = collapses

            if unit_strides:
                test = ast.BoolOp(
                    ast.And(),
                    [test]
                    + [
                        ast.Compare(_copy(stride), [ast.Eq()], [ast.Constant(1)])
                        for stride in unit_strides
                    ],
                )

            launch_call.keywords.append(ast.keyword(name, test))
            self._flags[key] = _Flag(
                kernel.name, name, collapses, group.stride_arguments[-1]
            )
            self._accesses[name] = []

        return self._flags[key]

    def finish(self, tree):
        if not self._flags:
            return

        insert_after_imports(tree, ast.parse(COLLAPSES_SOURCE).body)

        self.facts[FLAT_ACCESS_FLAGS] = {
            flag.name: FlatAccessFlag(
                flag.kernel,
                flag.name,
                flag.collapses,
                flag.inner_stride,
                tuple(self._accesses[flag.name]),
            )
            for flag in self._flags.values()
        }


class _Flag(typing.NamedTuple):
    kernel: str
    name: str
    collapses: ast.Call
    inner_stride: ast.expr


@dataclasses.dataclass(frozen=True)
class FlatAccessFlag:
    """A constexpr parameter :class:`ContiguousFlatAccess` added to a kernel: the fact it publishes under :data:`~ninetoothed_ascend.compiler.facts.FLAT_ACCESS_FLAGS`, by :attr:`name`.

    The launch sets the flag to :attr:`collapses` (and, for a store's flag,
    to its innermost stride being 1 as well); where it is true, each digit
    group of :attr:`accesses` takes its affine fast path: the group's
    summands ``G`` of the address became ``L * t if FLAG else G``.

    :param kernel: ``str``, the kernel's name.
    :param name: ``str``, the parameter.
    :param collapses: ``ast.Call``, the launch's
        ``ninetoothed_ascend_collapses(sizes, strides)`` of the flattened
        dimensions (the node in the launch, not a copy).
    :param inner_stride: ``ast.expr``, the launch's ``T.stride(k)`` of the
        innermost flattened dimension: the fast path's step ``t``.
    :param accesses: ``tuple`` of ``(ast.Call, DigitGroup)``: each
        ``triton.language.load`` or ``store`` the flag decides and its digit
        group, the nodes of the rewritten tree.
    """

    kernel: str
    name: str
    collapses: ast.Call
    inner_stride: ast.expr
    accesses: tuple


def _innermost_stride_arguments(owner, pointer, group, arguments):
    """The launch's stride expressions that must be 1 for a store at ``pointer`` to take ``group``'s fast path.

    Constraint: a store whose tile has a runtime stride on its innermost
    axis (conv2d's NCHW output seen as an ``(N * P * Q, K)`` tile: the
    filters step ``P * Q``) is a DMA that BiShengIR plans more UB for than
    the scalar store it replaces, and often cannot compile. Measured with
    ascendnpu-ir 1.2.0 on the NPU pipeline without ``TransposeStridedTiles``
    (``bench/discrete_access.py examples/vision/conv2d.py --bishengir
    --configs all --contiguous``, with that pass left out): conv2d
    with batch 1, fp16, 8 configs: the scalar store reaches ``hivmc`` for
    all 8, the DMA for 2 (2 UB overflows, 4 HFusion errors); 32 x 32 x 64
    plans 86,530 B with the scalar store and 145,280 B with the DMA. So a
    store's fast path also asks, at the launch, for a unit stride on its
    tile's innermost axis: the group's own last stride where the flat index
    is that axis, else the stride parameter scaling the ``arange`` there.
    Where the rows collapse with a unit stride instead (conv2d's NCHW output
    of batch 1), ``TransposeStridedTiles`` stores the tile transposed: one
    DMA whose innermost axis steps 1.

    :return: ``list`` of ``ast`` expressions (the launch's ``T.stride(k)``).
    """

    if 0 in arange_positions(owner, group.flat_index):
        return [group.stride_arguments[-1]]

    grouped = {id(term) for term in group.terms}

    return [
        arguments[term.right.id]
        for term in summands(pointer)
        if id(term) not in grouped
        and isinstance(term, ast.BinOp)
        and isinstance(term.op, ast.Mult)
        and isinstance(term.right, ast.Name)
        and term.right.id in arguments
        and 0 in arange_positions(owner, term.left)
    ]


def _zero_names(kernel):
    """The names a kernel assigns once, to an expression that is 0 for every integer (``pid % 1``)."""

    values = single_assignments(kernel)
    zeros = set()
    changed = True

    while changed:
        changed = False

        for name, value in values.items():
            if name not in zeros and _is_zero(value, zeros):
                zeros.add(name)
                changed = True

    return zeros


def _is_zero(node, zeros):
    if isinstance(node, ast.Constant):
        return node.value == 0 and not isinstance(node.value, bool)

    if isinstance(node, ast.Name):
        return node.id in zeros

    if not isinstance(node, ast.BinOp):
        return False

    if isinstance(node.op, ast.Mod):
        return (
            isinstance(node.right, ast.Constant)
            and node.right.value == 1
            or _is_zero(node.left, zeros)
        )

    if isinstance(node.op, ast.Mult):
        return _is_zero(node.left, zeros) or _is_zero(node.right, zeros)

    return isinstance(node.op, (ast.Add, ast.Sub)) and (
        _is_zero(node.left, zeros) and _is_zero(node.right, zeros)
    )


def _drop_digit_bounds(mask, group, flag, zeros):
    """``kept if flag else mask`` where ``mask`` bounds ``L``, ``kept`` being ``mask`` less its digit bounds.

    A digit bound is ``D < s_k`` or ``D >= 0`` for a digit ``D`` of the
    group (plus offsets that are 0 for every program, ``zeros``), ``s_k``
    equal to the digit's size: for ``0 <= L < s0 * s1 * ...`` every digit
    is within its size.
    """

    terms = list(_conjuncts(mask))
    digits = {structure(digit): k for k, digit in enumerate(group.digits)}
    parts = {structure(node) for node in walk(group.flat_index)}
    sizes = group.size_parameters

    def is_bound(term, operator):
        return (
            isinstance(term, ast.Compare)
            and len(term.ops) == 1
            and isinstance(term.ops[0], operator)
        )

    def is_zero_constant(node):
        return isinstance(node, ast.Constant) and node.value == 0

    def is_digit_bound(term):
        if not (is_bound(term, ast.Lt) or is_bound(term, ast.GtE)):
            return False

        varying = [
            summand for summand in summands(term.left) if not _is_zero(summand, zeros)
        ]

        if len(varying) != 1 or structure(varying[0]) not in digits:
            return False

        k = digits[structure(varying[0])]

        if is_bound(term, ast.GtE):
            return is_zero_constant(term.comparators[0])

        return equals_on_sizes(term.comparators[0], lambda sizes: sizes[k], sizes)

    upper = any(
        is_bound(term, ast.Lt)
        and same(term.left, group.flat_index)
        and equals_on_sizes(term.comparators[0], math.prod, sizes)
        for term in terms
    )
    lower = any(
        is_bound(term, ast.GtE)
        and structure(term.left) in parts
        and is_zero_constant(term.comparators[0])
        for term in terms
    )
    kept = [term for term in terms if not is_digit_bound(term)]

    if not (upper and lower) or len(kept) == len(terms):
        return mask

    fast = kept[0]

    for term in kept[1:]:
        fast = ast.BinOp(fast, ast.BitAnd(), term)

    return ast.IfExp(ast.Name(flag, ast.Load()), _copy(fast), mask)


def _conjuncts(node):
    return operands(node, ast.BitAnd)


def _copy(node):
    return ast.parse(ast.unparse(node), mode="eval").body


def _replace_group(pointer, group, flag, zeros):
    ids = {id(term) for term in group.terms}
    first = id(group.terms[0])
    fast = ast.BinOp(
        _copy(group.flat_index), ast.Mult(), ast.Name(group.strides[-1], ast.Load())
    )

    # sum((D_k + o_k) * t_k) = L * t_inner + sum(o_k * t_k) on a collapsible layout.
    for offsets, stride in zip(group.offsets, group.strides):
        for offset in offsets:
            if not _is_zero(offset, zeros):
                fast = ast.BinOp(
                    fast,
                    ast.Add(),
                    ast.BinOp(_copy(offset), ast.Mult(), ast.Name(stride, ast.Load())),
                )
    general = group.terms[0]

    for term in group.terms[1:]:
        general = ast.BinOp(general, ast.Add(), term)

    chosen = ast.IfExp(ast.Name(flag, ast.Load()), fast, general)

    def rebuild(node):
        if id(node) == first:
            return chosen

        if id(node) in ids:
            return None

        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = rebuild(node.left), rebuild(node.right)

            if left is None:
                return right

            if right is None:
                return left

            node.left, node.right = left, right

        return node

    return rebuild(pointer)
