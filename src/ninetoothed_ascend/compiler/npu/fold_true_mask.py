"""The NPU pass :class:`FoldTrueMask`."""

import ast

from ninetoothed_ascend.compiler.passes import MaskPass
from ninetoothed_ascend.compiler.syntax import Transformer


class FoldTrueMask(MaskPass):
    """Rewrite ``mask=True & m`` into ``mask=m`` in loads and stores.

    Constraint: the Triton 3.2 frontend that triton-ascend 3.2.0 ships fails on
    a Python ``bool`` combined with a tensor inside a mask, with
    ``'bool' object has no attribute 'type'``; every mask NineToothed 0.26
    generates starts with ``True & ...`` (measured on 27 ntops kernels,
    docs/ascend.md, "NineToothed 0.26's output on triton-ascend 3.2.0").

    Only ``mask=`` arguments of ``triton.language.load``/``store`` are folded:
    there the operands are boolean, so ``True & m`` equals ``m``. Elsewhere
    ``True & n`` is ``n & 1`` for an integer ``n`` and is left alone.

    :Constraint: Triton 3.2's frontend in triton-ascend fails on `True &
        tensor` in a mask (`'bool' object has no attribute 'type'`)
    :Source: measured, docs/ascend.md, "NineToothed 0.26's output on
        triton-ascend 3.2.0";
        `tests/check/test_compile_check.py::test_without_fold_true_mask_the_frontend_fails`
    :Rewrites: `True & m` in `load`/`store` masks becomes `m`
    """

    def rewrite_mask(self, mask):
        return _TrueOperandRemover(self).visit(mask)


class _TrueOperandRemover(Transformer):
    def __init__(self, owner):
        self._owner = owner

    def visit_BinOp(self, node):
        self.generic_visit(node)

        if isinstance(node.op, ast.BitAnd):
            for operand, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(operand, ast.Constant) and operand.value is True:
                    self._owner.rewrote()

                    return other

        return node
