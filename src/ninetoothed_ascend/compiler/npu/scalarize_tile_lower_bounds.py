"""Compare the program index, not the tile, against zero in masks."""

import ast

from ninetoothed_ascend.compiler.passes import ComparisonMaskPass
from ninetoothed_ascend.compiler.syntax import is_zero, same


class ScalarizeTileLowerBounds(ComparisonMaskPass):
    """Rewrite ``index * C + arange(0, C)[...] >= 0`` into ``index >= 0`` inside load and store masks.

    Constraint: ``triton-adapter-opt`` in triton-ascend 3.2.0 corrupts its heap
    (segfault or "double free", nondeterministically) in its first pass,
    ``--discrete-mask-access-conversion``, when a lower bound on a block whose
    start is a runtime value sits inside an ``&`` that is itself an operand of
    another ``&``. NineToothed emits exactly that for every tiled dimension,
    so its matmul crashed the adapter in every config (found by bisection
    under valgrind; reproducer in ``tests/reproducers/adapter_lower_bound_crash.py``).

    The rewrite is exact: for an integer ``index``, ``C > 0`` (``arange``
    requires it) and ``a`` in ``[0, C)``, ``index * C + a >= 0`` holds exactly
    when ``index >= 0``. The scalar condition broadcasts to the same mask.
    Matched by structure: the sum of a product and ``arange(0, C)`` (either
    order of either operation), with the same ``C`` in both places.

    :Constraint: `triton-adapter-opt` 3.2.0 corrupts its heap (segfault,
        "double free") when a runtime lower bound `index * C + arange(0, C) >=
        0` sits inside a nested `&` in a mask
    :Source: bisected here under valgrind;
        `tests/reproducers/adapter_lower_bound_crash.py`,
        `test_adapter_lower_bound_crash_and_its_cure`
    :Rewrites: that term becomes the exact `index >= 0`
    """

    def rewrite_comparison(self, node):
        for _, size, index, factor in lower_bound_terms(self, node):
            if same(factor, size):
                self.rewrote()

                return index_lower_bound(index, node)

        return node


def lower_bound_terms(owner, node):
    """Yield ``(arange, size, index, factor)`` for each reading of ``node`` as ``index * factor + arange >= 0``.

    ``arange`` is ``triton.language.arange(0, size)``, subscripted or not;
    either order of the sum and of the product is read. Nothing is yielded
    when ``node`` is no such comparison. Which reading may be rewritten is
    each lower-bound pass's own proof: :class:`ScalarizeTileLowerBounds`
    needs ``factor == size``, ``ScalarizePaddedTileLowerBounds`` a guard.

    :param owner: the :class:`~ninetoothed_ascend.compiler.passes.Pass` whose
        imports resolve ``arange``.
    :param node: an ``ast`` expression.
    """

    if not (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.GtE)
        and is_zero(node.comparators[0])
        and isinstance(node.left, ast.BinOp)
        and isinstance(node.left.op, ast.Add)
    ):
        return

    total = node.left

    for arange, product in ((total.right, total.left), (total.left, total.right)):
        size = arange_size(owner, arange)

        if size is None or not (
            isinstance(product, ast.BinOp) and isinstance(product.op, ast.Mult)
        ):
            continue

        for index, factor in (
            (product.left, product.right),
            (product.right, product.left),
        ):
            yield arange, size, index, factor


def arange_size(owner, node):
    """Return ``size`` if ``node`` is ``triton.language.arange(0, size)``, subscripted or not, else ``None``.

    :param owner: the :class:`~ninetoothed_ascend.compiler.passes.Pass` whose
        imports resolve ``arange``.
    :param node: an ``ast`` expression.
    """

    if isinstance(node, ast.Subscript):
        node = node.value

    if (
        owner.is_call_to(node, "triton.language.arange")
        and len(node.args) == 2
        and not node.keywords
        and is_zero(node.args[0])
    ):
        return node.args[1]

    return None


def index_lower_bound(index, node):
    """Return ``index >= 0``, located where ``node`` is, to replace it."""

    return ast.copy_location(
        ast.Compare(left=index, ops=[ast.GtE()], comparators=[ast.Constant(0)]),
        node,
    )
