"""The CPU pass :class:`BindLanguageModule`."""

import ast

from ninetoothed_ascend.compiler.passes import (
    Pass,
    RewriteError,
)
from ninetoothed_ascend.compiler.syntax import (
    insert_after_imports,
)


class BindLanguageModule(Pass):
    """Reach ``triton.language`` through a module-level ``tl``.

    Constraint: the interpreter replaces ``triton.language``'s functions only
    in modules that hold a global bound to that module object (``_patch_lang``
    in triton/runtime/interpreter.py, Triton 3.6 and 3.9), and it recognizes
    constexpr parameters only by an annotation that normalizes to
    ``constexpr``, which ``tl.constexpr`` does and NineToothed's
    ``triton.language.constexpr`` does not once the interpreter has re-parsed
    the kernel (``_normalize_ty`` strips ``tl.`` only). NineToothed's code
    then fails with "arange's arguments must be of type tl.constexpr"
    (docs/ascend.md, "Without a driver").

    Every ``triton.language.name`` becomes ``tl.name``, and
    ``import triton.language as tl`` is added.

    :Constraint: the interpreter patches `triton.language` only through a
        global bound to it, and recognizes constexpr only as `tl.constexpr`
    :Source: triton/runtime/interpreter.py `_patch_lang`, triton/runtime/jit.py
        `_normalize_ty`
    """

    def visit_Attribute(self, node):
        if (
            isinstance(node.value, ast.Attribute)
            and self.resolve(node.value) == "triton.language"
        ):
            self.rewrote()

            return ast.copy_location(
                ast.Attribute(
                    value=ast.Name("tl", ast.Load()), attr=node.attr, ctx=node.ctx
                ),
                node,
            )

        self.generic_visit(node)

        return node

    def finish(self, tree):
        if self.aliases.get("tl") == "triton.language":
            return

        if "tl" in self.aliases:
            raise RewriteError(
                f"the module binds `tl` to {self.aliases['tl']}, not triton.language.",
                "Import that module under another name in the kernel's globals.",
            )

        insert_after_imports(tree, [ast.parse("import triton.language as tl").body[0]])
