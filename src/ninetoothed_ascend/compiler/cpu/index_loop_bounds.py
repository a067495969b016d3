"""The CPU pass :class:`IndexLoopBounds`."""

import ast

from ninetoothed_ascend.compiler.passes import (
    Pass,
)
from ninetoothed_ascend.compiler.syntax import (
    Transformer,
    insert_after_imports,
)


class IndexLoopBounds(Pass):
    """Turn the bounds of ``range`` loops in kernels into Python integers before ``range`` sees them.

    Constraint: the interpreter holds scalars as one-element NumPy arrays and
    converts them for ``range`` with ``int(array)``, which NumPy 2 refuses for
    arrays of one dimension: Triton 3.6's interpreter fails on any loop over a
    runtime bound with "only 0-dimensional arrays can be converted to Python
    scalars" (seen on the GPU machine; Triton 3.9 squeezes the array first).

    Each ``range(...)`` argument ``a`` inside a kernel becomes
    ``ninetoothed_loop_bound(a)``, a module-level function that returns the
    scalar's value, and any other value unchanged.

    :Constraint: Triton 3.6's interpreter converts loop bounds with `int()` on
        one-element NumPy arrays, which NumPy 2 refuses ("only 0-dimensional
        arrays can be converted")
    :Source: seen on the GPU machine (Triton 3.6);
        triton/runtime/interpreter.py `__index__`
    """

    TRIGGERS = ("range",)

    def visit_FunctionDef(self, node):
        if self.module.is_kernel(node):
            _RangeBoundWrapper(self).visit(node)

        return node

    def finish(self, tree):
        if self.rewrites:
            insert_after_imports(tree, ast.parse(_LOOP_BOUND).body)


_LOOP_BOUND = """
def ninetoothed_loop_bound(value):
    handle = getattr(value, "handle", None)
    return int(handle.data.reshape(-1)[0]) if handle is not None else value
"""


class _RangeBoundWrapper(Transformer):
    def __init__(self, owner):
        self._owner = owner

    def visit_Call(self, node):
        self.generic_visit(node)

        if isinstance(node.func, ast.Name) and node.func.id == "range":
            node.args = [
                ast.Call(ast.Name("ninetoothed_loop_bound", ast.Load()), [argument], [])
                for argument in node.args
            ]
            self._owner.rewrote()

        return node
