"""Fold the constant ``True`` that NineToothed puts in front of every mask."""

import ast

from ninetoothed_ascend.ascendify.base import Pass, keyword

_MEMORY_ACCESSES = ("triton.language.load", "triton.language.store")


class FoldTrueMask(Pass):
    """Rewrite ``mask=True & m`` into ``mask=m`` in loads and stores.

    Constraint: the Triton 3.2 frontend that triton-ascend 3.2.0 ships fails on
    a Python ``bool`` combined with a tensor inside a mask, with
    ``'bool' object has no attribute 'type'``; every mask NineToothed 0.26
    generates starts with ``True & ...`` (measured on 27 ntops kernels,
    ../shared/ASCEND.md, "What raw NineToothed output does").

    Only ``mask=`` arguments of ``triton.language.load``/``store`` are folded:
    there the operands are boolean, so ``True & m`` equals ``m``. Elsewhere
    ``True & n`` is ``n & 1`` for an integer ``n`` and is left alone.
    """

    def visit_Call(self, node):
        self.generic_visit(node)

        if self.is_call_to(node, *_MEMORY_ACCESSES):
            mask = keyword(node, "mask")

            if mask is not None:
                mask.value = _TrueOperandRemover(self).visit(mask.value)

        return node


class _TrueOperandRemover(ast.NodeTransformer):
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
