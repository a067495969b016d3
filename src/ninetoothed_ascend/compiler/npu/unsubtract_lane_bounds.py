"""The NPU pass :class:`UnsubtractLaneBounds`."""

import ast

from ninetoothed_ascend.compiler.passes import ComparisonMaskPass, holds_arange
from ninetoothed_ascend.compiler.syntax import added, is_zero


class UnsubtractLaneBounds(ComparisonMaskPass):
    """Bound a tile's lanes by a sum, not a difference: ``start + a - c < n`` becomes ``start + a < n + c``.

    A tile that begins before its tensor (a tensor padded in front: ntops'
    rot90 pads a row of ``n`` elements by ``(-n) % 32`` in front and reads it
    in tiles of lanes ``a = arange(0, 32)`` at offsets ``start + a - pad``)
    is masked by NineToothed as ``start + a - pad < n`` and ``start + a -
    pad >= 0``. ``triton-adapter-opt``'s mask analysis folds a bound whose
    lanes' side is the lanes plus scalars (``start + a < n``, ``a >= L``)
    into the extent and the offset it copies, but not one with a scalar
    subtracted there: it copies every lane of the tile, before the tensor's
    first byte and past its last, and then selects; on an NPU such a read
    faults where that memory is unmapped (triton-lang/triton-ascend#2332).
    Moving each subtracted scalar to the other side is exact for integers:
    ``s + a - c < n`` holds exactly when ``s + a < n + c``, and ``s + a - c
    >= 0`` exactly when ``s + a >= c``.

    Matched by structure: a comparison ``E < R`` or ``E >= R`` in a load's or
    store's mask whose ``E`` is a chain of ``+``, ``-`` and negations holding
    an ``arange`` only in terms it adds, with at least one term without an
    ``arange`` that it subtracts, and whose ``R`` holds no ``arange``. A
    bound without a subtraction is left as NineToothed wrote it.

    :Constraint: `triton-adapter-opt` 3.2.0 folds a mask bound `s + a < n` or
        `s + a >= L` on the lanes `a = arange(0, C)` into the copy, but not
        `s + a - c < n` or `s + a - c >= 0`: the copy reads every lane
    :Source: measured at the lowered level (`ninetoothed-ascend check
        --run`, fenced; a load of `x + a - c` of 16 elements, 32 lanes, `c =
        4`): the masks `(a - c < n) & (a >= c)` and `(a - c >= 0) & (a - c <
        n)` read past `x`, `(a < n + c) & (a >= c)` and `(a + s >= 0) & (a + s
        < n)` with `s = -c` run without a fault and load the right lanes;
        ntops' rot90 (12 launches of `scripts/ntops_corpus.py record`) read 56
        to 576 bytes before its input;
        `tests/reproducers/subtracted_lane_bound_reads_masked_lanes.py`;
        `tests/compiler/npu/test_unsubtract_lane_bounds.py`
    :Rewrites: `E - c < R` becomes `E < R + c`, `E - c >= 0` becomes `E >=
        c` (each scalar `c` subtracted beside the lanes)
    """

    TRIGGERS = ("triton.language.arange",)

    def rewrite_comparison(self, node):
        if not (
            len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Lt, ast.GtE))
            and holds_arange(self, node.left)
            and not holds_arange(self, node.comparators[0])
        ):
            return node

        terms = [
            (sign, term, holds_arange(self, term))
            for sign, term in _signed_terms(node.left)
        ]
        kept = [term for sign, term, _ in terms if sign > 0]
        subtracted = [term for sign, term, lanes in terms if sign < 0 and not lanes]

        if not subtracted or any(sign < 0 and lanes for sign, _, lanes in terms):
            return node

        self.rewrote()
        bound = node.comparators[0]
        moved = added(subtracted) if is_zero(bound) else added([bound, *subtracted])

        return ast.copy_location(ast.Compare(added(kept), [node.ops[0]], [moved]), node)


def _signed_terms(node, sign=1):
    # ``(sign, term)`` for each term of a chain of ``+``, ``-`` and negations.
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        yield from _signed_terms(node.left, sign)
        yield from _signed_terms(
            node.right, sign if isinstance(node.op, ast.Add) else -sign
        )
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield from _signed_terms(node.operand, -sign)
    else:
        yield sign, node
