"""Compare the program index, not the tile, against zero in masks, for tiles padded to a power of two."""

import ast

from ninetoothed_ascend.compiler.npu.scalarize_tile_lower_bounds import (
    arange_size,
    index_lower_bound,
    lower_bound_terms,
)
from ninetoothed_ascend.compiler.passes import MaskPass
from ninetoothed_ascend.compiler.syntax import structure


class ScalarizePaddedTileLowerBounds(MaskPass):
    """Rewrite ``index * M + arange(0, N)[...] >= 0`` into ``index >= 0`` in masks that also require ``arange(0, N)[...] < M``.

    Constraint: the same ``triton-adapter-opt`` heap corruption in
    triton-ascend 3.2.0 that :class:`ScalarizeTileLowerBounds` cures (a
    runtime lower bound on a block inside a nested ``&``; segfault, exit
    code -11, nondeterministically). NineToothed writes the bound with a
    tile size ``M`` and an ``arange`` of its padded size ``N`` when the
    tile size is not a literal power of two: with constexpr shapes a tile
    of ``size`` elements becomes ``arange(0, ninetoothed_next_power_of_2_...)``
    next to a factor ``size``, and a tile of ``D // 2`` elements taken at
    dilation or in pairs becomes ``index * 2 * (D // 2) + arange(0, P)``.
    :class:`ScalarizeTileLowerBounds` leaves those alone, since there
    ``N != M``. Measured here on ``examples/position/apply_rotary_pos_emb.py``
    (level 2, the compile check): its NPU variant crashed the adapter in 12
    of 48 compiles, and in none of 56 with this pass placed after
    :class:`ScalarizeTileLowerBounds`. The reproducer,
    ``tests/reproducers/adapter_padded_lower_bound_crash.py``, crashed it in
    16 of 16 compiles, and in none once rewritten.

    The rewrite is exact because the mask is a conjunction that also holds
    the padding guard ``arange(0, N)[...] < M`` on the same ``arange``
    (same ``N``, same subscript) and the same ``M``. Lane by lane, with
    ``a`` the ``arange`` value (``0 <= a``): if ``a < M`` then ``M > 0`` and
    ``index * M + a >= 0`` holds exactly when ``index >= 0`` for an integer
    ``index``; if ``a >= M`` the guard makes the whole mask false either way.
    Only conjuncts of the mask's top-level ``&`` chain are rewritten, and only
    when the guard is another conjunct of that chain. Matched by structure:
    the sum of a product and ``arange(0, N)`` (either order of either
    operation); the factor of the product that equals the guard's ``M`` is
    ``M``, the other is ``index``.

    :Constraint: the same `triton-adapter-opt` 3.2.0 lower-bound crash, on
        tiles padded to a power of two: `index * M + arange(0, N) >= 0` with `N
        = next_power_of_2(M)`
    :Source: bisected here;
        `tests/reproducers/adapter_padded_lower_bound_crash.py`,
        `tests/compiler/npu/test_scalarize_padded_tile_lower_bounds.py`
    :Rewrites: that term becomes `index >= 0` when the same `&` chain holds the
        padding guard `arange(0, N) < M`, which makes it exact
    """

    def rewrite_mask(self, mask):
        conjuncts = _conjuncts(mask)
        guards = {
            (structure(conjunct.left), structure(conjunct.comparators[0]))
            for conjunct in conjuncts
            if isinstance(conjunct, ast.Compare)
            and len(conjunct.ops) == 1
            and isinstance(conjunct.ops[0], ast.Lt)
            and arange_size(self, conjunct.left) is not None
        }

        return self._rewrite_conjuncts(mask, guards)

    def _rewrite_conjuncts(self, node, guards):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
            node.left = self._rewrite_conjuncts(node.left, guards)
            node.right = self._rewrite_conjuncts(node.right, guards)

            return node

        for arange, _, index, factor in lower_bound_terms(self, node):
            if (structure(arange), structure(factor)) in guards:
                self.rewrote()

                return index_lower_bound(index, node)

        return node


def _conjuncts(node):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
        return _conjuncts(node.left) + _conjuncts(node.right)

    return [node]
