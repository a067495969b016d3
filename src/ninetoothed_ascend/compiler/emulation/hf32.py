"""What the emulations of ``input_precision="hf32"`` share."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import keyword, walk


class EmulateHf32(Pass):
    PRECISION = None

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self.is_call_to(node, "triton.language.dot"):
            return node

        precision = keyword(node, "input_precision")
        value = (
            precision.value
            if precision is not None
            else node.args[3]
            if len(node.args) > 3
            else None
        )

        # ``UseHf32InDot`` writes hf32 as a literal or as a branch of a
        # conditional on the operands' dtypes: every hf32 literal of the
        # argument is mapped.
        for constant in walk(value) if value is not None else ():
            if isinstance(constant, ast.Constant) and constant.value == "hf32":
                constant.value = self.PRECISION
                self.rewrote()

        return node
