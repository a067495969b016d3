"""Give masked loads an explicit fill value."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import keyword


class FillMaskedLoads(Pass):
    """Rewrite ``load(p, mask=m, other=None)`` into ``load(p, mask=m, other=0)``.

    Constraint: NineToothed 0.26 passes ``other=None`` to every masked load of
    a tensor without an ``other`` option; with triton-ascend 3.2.0 such kernels
    only cleared the compile check once ``other`` was a number (measured,
    docs/ascend.md). Masked-off lanes of a load are undefined in Triton,
    so a zero changes no result a correct kernel can observe.

    The zero is typed: Triton's ``load`` casts ``other`` to the pointer's
    element type (``semantic.load`` in Triton 3.2), so the integer literal
    ``0`` becomes an exact zero of every element type, integer, boolean and
    floating point alike.

    :Constraint: masked loads need a fill value
    :Source: measured, docs/ascend.md, "NineToothed 0.26's output on
        triton-ascend 3.2.0"
    :Rewrites: `other=None` becomes `other=0`
    """

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self.is_call_to(node, "triton.language.load"):
            return node

        mask = keyword(node, "mask")
        other = keyword(node, "other")

        if (
            mask is not None
            and not _is_none(mask.value)
            and other is not None
            and _is_none(other.value)
        ):
            other.value = ast.Constant(0)
            self.rewrote()

        return node


def _is_none(node):
    return isinstance(node, ast.Constant) and node.value is None
