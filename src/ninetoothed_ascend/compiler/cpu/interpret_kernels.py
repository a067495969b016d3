"""The CPU pass :class:`InterpretKernels`."""

import ast

from ninetoothed_ascend.compiler.passes import (
    Pass,
)
from ninetoothed_ascend.compiler.syntax import (
    insert_after_imports,
)


class InterpretKernels(Pass):
    """Decorate kernels with the interpreter instead of ``triton.jit``.

    ``triton.jit`` chooses the interpreter only when ``TRITON_INTERPRET=1`` is
    set when the decorator runs; the CPU variant must interpret whatever the
    environment says, so it names ``InterpretedFunction`` directly.

    :Constraint: `triton.jit` interprets only if `TRITON_INTERPRET=1` was set
        at decoration
    :Source: triton/runtime/jit.py `jit`
    """

    def visit_FunctionDef(self, node):
        for index, decorator in enumerate(node.decorator_list):
            if self.module.is_jit(decorator):
                node.decorator_list[index] = ast.parse(
                    "triton.runtime.interpreter.InterpretedFunction", mode="eval"
                ).body
                self.rewrote()

        return node

    def finish(self, tree):
        if self.rewrites:
            insert_after_imports(
                tree, [ast.parse("import triton.runtime.interpreter").body[0]]
            )
