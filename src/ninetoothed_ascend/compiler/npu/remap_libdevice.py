"""Map every CUDA libdevice call to triton-ascend, by :data:`~ninetoothed_ascend.compiler.libdevice_table.LIBDEVICE`."""

import ast

from ninetoothed_ascend.compiler.libdevice_table import (
    LIBDEVICE,
    Ascend,
    Core,
    NoEquivalent,
)
from ninetoothed_ascend.compiler.passes import Pass, RewriteError
from ninetoothed_ascend.compiler.syntax import insert_after_imports
from ninetoothed_ascend.compiler.target import (
    LIBDEVICE_AFTER_3_2,
    LIBDEVICE_UP_TO_3_2,
)

#: Where triton-ascend keeps its libdevice, newest first: ``cann`` after 3.2,
#: ``ascend`` up to it (the target chooses among them by version:
#: :attr:`~ninetoothed_ascend.compiler.target.Target.libdevice_modules`).
ASCEND_LIBDEVICE_MODULES = (LIBDEVICE_AFTER_3_2, LIBDEVICE_UP_TO_3_2)

#: The modules NineToothed (``from triton.language.extra import libdevice``)
#: and hand-written CUDA kernels import libdevice from.
CUDA_LIBDEVICE_MODULES = (
    "triton.language.extra.libdevice",
    "triton.language.extra.cuda.libdevice",
)

#: Where calls reach libdevice: the modules above, and
#: ``triton.language.libdevice``, which NineToothed 0.26 writes for
#: ``ninetoothed.language.libdevice.f(...)`` (it maps ``ninetoothed.language``
#: to ``triton.language``) and which no Triton since 3.0 has.
CUDA_LIBDEVICE_CALLS = (*CUDA_LIBDEVICE_MODULES, "triton.language.libdevice")

#: The name the NPU variant binds triton-ascend's libdevice to.
ASCEND_LIBDEVICE_ALIAS = "ninetoothed_ascend_libdevice"

#: Prefix of the module-level ``triton.jit`` functions that hold composites.
COMPOSITE_PREFIX = "ninetoothed_ascend_libdevice_"


class RemapLibdevice(Pass):
    """Rewrite every CUDA libdevice call by :data:`~ninetoothed_ascend.compiler.libdevice_table.LIBDEVICE`; import triton-ascend's libdevice where needed.

    Constraint: triton-ascend's libdevice is its own module with its own,
    smaller, set of functions (triton-ascend 3.2.0:
    ``triton.language.extra.ascend.libdevice``, 56 names; the current source
    tree: ``triton.language.extra.cann.libdevice``); CUDA Triton's
    ``triton.language.extra.libdevice`` dispatches to CUDA or HIP only, and
    triton-ascend's copy of it is stubs (docs/ascend.md, "libdevice").
    triton-ascend 3.2.0 refuses three functions of its libdevice (``atan2``,
    ``fmod``, ``div_rz``: :attr:`~ninetoothed_ascend.compiler.libdevice_table.AscendFunction.refused`);
    the table maps around them.

    Each call ``<libdevice>.name(args)`` becomes, by ``LIBDEVICE[name]``: a
    call of triton-ascend's function, of the core ``triton.language`` one, or
    of a module-level ``triton.jit`` composite added to the module (one per
    name, ``ninetoothed_ascend_libdevice_<name>``). A name with no
    equivalent, or not in the table, raises :class:`RewriteError` naming it.

    CUDA libdevice imports are removed. If anything uses triton-ascend's
    libdevice, it is imported once, as ``ninetoothed_ascend_libdevice``, from
    the target's triton-ascend's module
    (:attr:`~ninetoothed_ascend.compiler.target.Target.libdevice_modules`),
    or, generated where no triton-ascend is installed, from the first of
    :data:`ASCEND_LIBDEVICE_MODULES` that exists where the variant is
    imported; with none, the import raises an ``ImportError`` naming them.

    :Constraint: triton-ascend's libdevice is its own, smaller module
        (`triton.language.extra.ascend` in 3.2.0, `.cann` later); 3.2's
        `atan2(a, b)` computes `atan2(b, a)`, its `fmod` and `div_rz` are
        `static_assert(False)`
    :Source: triton-ascend 3.2 `language/extra/ascend/libdevice.py`;
        docs/ascend.md, "libdevice";
        `tests/compiler/npu/test_remap_libdevice.py` (every mapped function
        compile-checked)
    :Rewrites: every libdevice call by the table `LIBDEVICE` (all 197 functions
        of CUDA Triton 3.9's libdevice, all 56 of triton-ascend 3.2's): an
        Ascend libdevice function, a core `tl` function, a `triton.jit`
        composite added to the module, or a `RewriteError` naming the function;
        triton-ascend's libdevice is imported, detected at import, only where
        used
    """

    TRIGGERS = CUDA_LIBDEVICE_CALLS
    INTRODUCES = tuple(f"{package}.libdevice" for package in ASCEND_LIBDEVICE_MODULES)

    def run(self, tree, module=None):
        self._composites = {}
        self._uses_ascend = False

        return super().run(tree, module)

    def visit_ImportFrom(self, node):
        node.names = [
            alias
            for alias in node.names
            if f"{node.module}.{alias.name}" not in CUDA_LIBDEVICE_MODULES
        ]

        return node if node.names else None

    def visit_Import(self, node):
        node.names = [
            alias for alias in node.names if alias.name not in CUDA_LIBDEVICE_MODULES
        ]

        return node if node.names else None

    def visit_Call(self, node):
        name = _libdevice_function(self.resolve(node.func))

        if name is None:
            self.generic_visit(node)

            return node

        node.args = [self.visit(argument) for argument in node.args]
        node.keywords = [self.visit(keyword) for keyword in node.keywords]

        target = LIBDEVICE.get(name)

        if target is None or isinstance(target, NoEquivalent):
            reason = "it is not in the table" if target is None else target.reason
            raise RewriteError(
                f"libdevice.{name} has no Ascend equivalent: {reason}.",
                "Write the kernel with triton.language functions, or with a "
                "libdevice function listed in ninetoothed_ascend.compiler.libdevice_table.LIBDEVICE.",
            )

        if isinstance(target, Ascend):
            node.func = ast.Attribute(
                ast.Name(ASCEND_LIBDEVICE_ALIAS, ast.Load()), target.name, ast.Load()
            )
            self._uses_ascend = True
        elif isinstance(target, Core):
            node.func = ast.parse(f"triton.language.{target.name}", mode="eval").body
        else:
            helper = COMPOSITE_PREFIX + name
            self._composites[helper] = target
            self._uses_ascend |= "libdevice." in target.source
            node.func = ast.Name(helper, ast.Load())

        self.rewrote()

        return node

    def visit_Attribute(self, node):
        if _libdevice_function(self.resolve(node)) is not None:
            raise RewriteError(
                f"libdevice.{node.attr} is used other than by a call.",
                "Call libdevice functions directly in the kernel.",
            )

        self.generic_visit(node)

        return node

    def finish(self, tree):
        if self.aliases.get("triton") != "triton" and self._composites:
            # Composites name ``triton.language``; NineToothed always imports it.
            tree.body.insert(0, ast.parse("import triton.language").body[0])

        statements = (
            [_detecting_import(self.target.libdevice_modules)]
            if self._uses_ascend
            else []
        )
        statements += [
            composite_function(helper, target)
            for helper, target in sorted(self._composites.items())
        ]
        insert_after_imports(tree, statements)


def composite_function(name, composite):
    """Return the ``ast.FunctionDef`` of ``@triton.jit def name(...)`` for a :class:`~ninetoothed_ascend.compiler.libdevice_table.Composite`.

    ``tl`` in the composite's source becomes ``triton.language`` and
    ``libdevice`` becomes :data:`ASCEND_LIBDEVICE_ALIAS`.
    """

    function = ast.parse(composite.source).body[0]
    function.name = name
    function.decorator_list = [ast.parse("triton.jit", mode="eval").body]

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id == "tl":
                return ast.copy_location(
                    ast.parse("triton.language", mode="eval").body, node
                )

            if node.id == "libdevice":
                return ast.copy_location(
                    ast.Name(ASCEND_LIBDEVICE_ALIAS, ast.Load()), node
                )

            return node

    return ast.fix_missing_locations(Rename().visit(function))


def _libdevice_function(dotted):
    if dotted is None:
        return None

    module, _, name = dotted.rpartition(".")

    return name if module in CUDA_LIBDEVICE_CALLS else None


def _detecting_import(modules):
    alias = ast.alias("libdevice", ASCEND_LIBDEVICE_ALIAS)
    statement = ast.Raise(
        exc=ast.Call(
            func=ast.Name("ImportError", ast.Load()),
            args=[
                ast.Constant(
                    "The NPU variant needs triton-ascend's libdevice; found none of "
                    + ", ".join(f"{module}.libdevice" for module in modules)
                    + ". Install triton-ascend."
                )
            ],
            keywords=[],
        )
    )

    for module in reversed(modules):
        statement = ast.Try(
            body=[ast.ImportFrom(module=module, names=[alias], level=0)],
            handlers=[
                ast.ExceptHandler(
                    type=ast.Name("ImportError", ast.Load()),
                    name=None,
                    body=[statement],
                )
            ],
            orelse=[],
            finalbody=[],
        )

    return statement
