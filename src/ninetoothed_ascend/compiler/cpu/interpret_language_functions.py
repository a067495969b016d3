"""The CPU pass :class:`InterpretLanguageFunctions`."""

import ast

import triton
import triton.language
import triton.runtime.interpreter

from ninetoothed_ascend.compiler.passes import (
    Pass,
)
from ninetoothed_ascend.compiler.syntax import (
    insert_after_imports,
)

#: The dotted names of the ``triton.language`` functions that are
#: ``triton.jit`` functions in the installed Triton (``tl.max``, ``tl.sum``,
#: ...), and of those of ``triton.language.standard`` (the NPU variant calls
#: ``triton.language.standard.sort``: ``SortWithBitonicNetwork``).
_LANGUAGE_KERNELS = frozenset(
    f"{module.__name__}.{name}"
    for module in (triton.language, triton.language.standard)
    for name, value in vars(module).items()
    if isinstance(value, triton.runtime.JITFunction)
)


class InterpretLanguageFunctions(Pass):
    """Call interpreted copies of the ``triton.language`` functions that are themselves kernels.

    Constraint: ``tl.max``, ``tl.sum``, ``tl.sort``, ``tl.rand`` and the rest
    of ``triton.language.standard`` and ``triton.language.random`` are
    ``triton.jit`` functions, decorated when Triton is imported; unless
    ``TRITON_INTERPRET=1`` was set before that, calling one from an
    interpreted kernel raises "Cannot call @triton.jit'd outside of the scope
    of a kernel". Setting the variable would turn every kernel of the
    process, the CUDA variant's too, into an interpreted one.

    Each ``tl.name(...)`` whose target is a ``triton.jit`` function in the
    installed Triton becomes ``ninetoothed_interpreted_name(...)``, bound once
    at module level to ``interpreted(tl.name)``
    (:func:`ninetoothed_ascend.runtime.interpreted`).

    :Constraint: `tl.max`, `tl.sum`, ... are `triton.jit` functions; calling
        them from an interpreted kernel raises unless interpreted copies are
        used; each copy puts `triton.language.core` back after its call, which
        Triton 3.9 leaves patched (no kernel compiles afterwards)
    :Source: triton/language/standard.py
    """

    TRIGGERS = _LANGUAGE_KERNELS

    def visit_Call(self, node):
        self.generic_visit(node)

        name = self.resolve(node.func)

        if name in self.TRIGGERS:
            path = name.removeprefix("triton.language.")
            function_name = path.replace(".", "_")
            self.interpreted[function_name] = path
            node.func = ast.Name(f"ninetoothed_interpreted_{function_name}", ast.Load())
            self.rewrote()

        return node

    def run(self, tree, module=None):
        self.interpreted = {}

        return super().run(tree, module)

    def finish(self, tree):
        if not self.interpreted:
            return

        insert_after_imports(
            tree,
            [
                ast.parse(
                    "from ninetoothed_ascend.runtime import interpreted "
                    "as ninetoothed_ascend_interpreted"
                ).body[0],
                *(
                    ast.parse(
                        f"ninetoothed_interpreted_{name} = "
                        f"ninetoothed_ascend_interpreted(tl.{path})"
                    ).body[0]
                    for name, path in sorted(self.interpreted.items())
                ),
            ],
        )
