"""Use Ascend's hf32 where a kernel asks for tf32."""

import ast

from ninetoothed_ascend.ascendify.base import Pass, keyword

#: ``input_precision`` values that name NVIDIA's TensorFloat-32 modes.
_TF32_MODES = ("tf32", "tf32x3")

#: Position of ``input_precision`` in ``tl.dot(input, other, acc, input_precision, ...)``.
_INPUT_PRECISION_POSITION = 3


class UseHf32InDot(Pass):
    """Rewrite ``dot(..., input_precision="tf32" | "tf32x3")`` and ``allow_tf32=True`` into ``input_precision="hf32"``.

    Constraint: tf32 does not exist on Ascend; its counterpart is hf32, and
    triton-ascend 3.2.0 asserts "please use input_precision='hf32' on Ascend"
    on tf32 (measured on ntops mm, bmm and conv2d, ../shared/ASCEND.md;
    triton-ascend migration guide, docs/zh/migration_guide/migrate_from_gpu.md).
    hf32 keeps tf32's intent: fp32 operands multiplied at reduced precision,
    accumulated in fp32.
    """

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self.is_call_to(node, "triton.language.dot"):
            return node

        precision = keyword(node, "input_precision")

        if precision is not None and _is_tf32(precision.value):
            precision.value = ast.Constant("hf32")
            self.rewrote()
        elif len(node.args) > _INPUT_PRECISION_POSITION and _is_tf32(
            node.args[_INPUT_PRECISION_POSITION]
        ):
            node.args[_INPUT_PRECISION_POSITION] = ast.Constant("hf32")
            self.rewrote()

        allow_tf32 = keyword(node, "allow_tf32")

        if allow_tf32 is not None:
            node.keywords.remove(allow_tf32)

            if _is_true(allow_tf32.value):
                node.keywords.append(
                    ast.keyword("input_precision", ast.Constant("hf32"))
                )

            self.rewrote()

        return node


def _is_tf32(node):
    return isinstance(node, ast.Constant) and node.value in _TF32_MODES


def _is_true(node):
    return isinstance(node, ast.Constant) and node.value is True
