"""Import the standard-library modules a generated module uses without importing them."""

import ast
import builtins
import sys

from ninetoothed_ascend.compiler.passes import Pass


class ImportStandardModules(Pass):
    """Add ``import name`` for every standard-library module the module reads but never binds.

    Constraint: NineToothed 0.26 inlines the application's source into the
    kernel and keeps its references to modules (``math.sqrt(2 / math.pi)``
    in a tanh GELU), but imports only ``triton`` and ``triton.language``: the
    generated module reads ``math`` without binding it. Triton resolves a
    kernel's globals from its module, so triton-ascend's frontend fails on
    the name ("[ttir] ... math"; reproduced by
    ``tests/compiler/npu/test_import_standard_modules.py::test_npu_variant_of_gelu_with_math_and_libdevice_passes_the_compile_check``).
    Triton 3.9's interpreter hides the bug: it copies its own module's
    globals, ``math`` among them, into every kernel it rewrites.

    A name qualifies when it is read (``ast.Load``) somewhere in the module,
    is bound nowhere in it (no import, assignment, definition, parameter,
    loop or comprehension target, ``except ... as``, ``global``), is not a
    builtin, and is a top-level standard-library module
    (``sys.stdlib_module_names``). Nothing else is guessed: a third-party
    name stays unbound and fails as before. What is read and bound is
    :attr:`~ninetoothed_ascend.compiler.generated.GeneratedModule.unbound_names`.

    :Constraint: NineToothed 0.26 keeps an application's `math.sqrt(...)` in
        the kernel but imports only `triton`; the frontend fails on the unbound
        `math`
    :Source: reproduced: `tests/compiler/npu/test_import_standard_modules.py`
        (compile check without the pass)
    :Rewrites: `import m` for each standard-library module read but bound
        nowhere in the module (`sys.stdlib_module_names`, not a builtin)
    """

    def visit_Module(self, node):
        missing = sorted(
            name
            for name in self.module.unbound_names
            if not hasattr(builtins, name) and name in sys.stdlib_module_names
        )

        if missing:
            node.body[0:0] = [ast.Import([ast.alias(name)]) for name in missing]
            self.rewrote(len(missing))

        return node
