"""The NPU pass :class:`UnscaleStridedLaneBounds`."""

import ast

from ninetoothed_ascend.compiler.npu.scalarize_tile_lower_bounds import (
    arange_size,
    index_lower_bound,
)
from ninetoothed_ascend.compiler.passes import ComparisonMaskPass, holds_arange
from ninetoothed_ascend.compiler.syntax import same


class UnscaleStridedLaneBounds(ComparisonMaskPass):
    """Bound a dilated tile's lanes by their index, not by the offsets they address.

    A tile of lanes ``a = arange(0, C)`` that steps ``K`` elements (ntops'
    ``diag``: ``tile((C,), strides=(C * K,), dilation=(K,))``) is masked by
    NineToothed as ``start + a * K < n`` and ``index * (C * K) + a * K >= 0``,
    ``start`` free of lanes. ``triton-adapter-opt``'s mask analysis folds a
    bound on the lane index into the extent it copies, but not a bound on the
    lane index times a stride: it copies all ``C`` strided lanes, reading
    past the tensor's end, then selects. For a constant ``K > 0`` and
    integers, ``start + a * K < n`` holds exactly when ``a < (n - start + K
    - 1) // K`` (the ceiling of ``(n - start) / K``; where that is not
    positive no lane holds, under floor or truncating division alike), and
    ``index * (C * K) + a * K >= 0`` exactly when ``index >= 0`` (``a`` in
    ``[0, C)``).

    :Constraint: `triton-adapter-opt` folds a mask `a < bound` on the lanes
        `a = arange(0, C)` into the copied extent, but not `start + a * K <
        n` for a constant stride `K > 1`: the copy reads all `C` lanes, past
        the tensor's end
    :Source: measured at the lowered level: ntops' `diag` (5 launches of
        `scripts/ntops_corpus.py record`, strides 4, 6, 7, 9) faulted on the
        fenced tensor's end (`memref.copy` of `memref<32xf32, strided<[6]>>`)
        before the rewrite and ran without a fault after;
        `tests/reproducers/strided_lane_bound_reads_masked_lanes.py`;
        `tests/compiler/npu/test_unscale_strided_lane_bounds.py`
    :Rewrites: `start + a * K < n` becomes `a < (n - start + K - 1) // K`;
        `index * (C * K) + a * K >= 0` becomes `index >= 0`
    """

    TRIGGERS = ("triton.language.arange",)

    def rewrite_comparison(self, node):
        if not (len(node.ops) == 1 and isinstance(node.ops[0], (ast.Lt, ast.GtE))):
            return node

        term = self._strided_lanes(node.left)
        bound = node.comparators[0]

        if term is None or holds_arange(self, bound):
            return node

        lanes, size, stride, start = term

        if isinstance(node.ops[0], ast.Lt):
            self.rewrote()
            remaining = bound if start is None else ast.BinOp(bound, ast.Sub(), start)

            return ast.copy_location(
                ast.Compare(
                    lanes,
                    [ast.Lt()],
                    [
                        ast.BinOp(
                            ast.BinOp(remaining, ast.Add(), ast.Constant(stride - 1)),
                            ast.FloorDiv(),
                            ast.Constant(stride),
                        )
                    ],
                ),
                node,
            )

        index = self._tile_index(start, size, stride)

        if index is None or not (
            isinstance(bound, ast.Constant)
            and type(bound.value) is int
            and bound.value == 0
        ):
            return node

        self.rewrote()

        return index_lower_bound(index, node)

    def _strided_lanes(self, node):
        # ``(lanes, size, K, start)`` for ``start + lanes * K`` (either order
        # of either operation; ``start`` may be absent, then ``None``), the
        # lanes an ``arange(0, size)`` and ``K`` an ``int`` constant above 1.
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            candidates = [(node.right, node.left), (node.left, node.right)]
        else:
            candidates = [(node, None)]

        for product, rest in candidates:
            if not (
                isinstance(product, ast.BinOp) and isinstance(product.op, ast.Mult)
            ):
                continue

            for lanes, stride in (
                (product.left, product.right),
                (product.right, product.left),
            ):
                size = arange_size(self, lanes)

                if (
                    size is not None
                    and isinstance(stride, ast.Constant)
                    and type(stride.value) is int
                    and stride.value > 1
                    and (rest is None or not holds_arange(self, rest))
                ):
                    return lanes, size, stride.value, rest

        return None

    def _tile_index(self, start, size, stride):
        # ``index`` where ``start`` is ``index * (size * stride)``, either
        # order of either product.
        if not (isinstance(start, ast.BinOp) and isinstance(start.op, ast.Mult)):
            return None

        for index, factor in ((start.left, start.right), (start.right, start.left)):
            if not (isinstance(factor, ast.BinOp) and isinstance(factor.op, ast.Mult)):
                continue

            for tile, step in (
                (factor.left, factor.right),
                (factor.right, factor.left),
            ):
                if (
                    same(tile, size)
                    and isinstance(step, ast.Constant)
                    and step.value == stride
                    and not holds_arange(self, index)
                ):
                    return index

        return None
