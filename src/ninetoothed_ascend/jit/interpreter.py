"""The CPU variant: NineToothed's source made runnable by Triton's interpreter."""

import ast
import math

import triton
import triton.language

from ninetoothed_ascend.ascendify.base import (
    MaskPass,
    Pass,
    RewriteError,
    autotune_assignments,
    autotune_block_sizes,
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
    (../shared/ASCEND.md, "Without a driver").

    Every ``triton.language.name`` becomes ``tl.name``, and
    ``import triton.language as tl`` is added.
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


class InterpretKernels(Pass):
    """Decorate kernels with the interpreter instead of ``triton.jit``.

    ``triton.jit`` chooses the interpreter only when ``TRITON_INTERPRET=1`` is
    set when the decorator runs; the CPU variant must interpret whatever the
    environment says, so it names ``InterpretedFunction`` directly.
    """

    def visit_FunctionDef(self, node):
        for index, decorator in enumerate(node.decorator_list):
            if self.resolve(decorator) == "triton.jit":
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


class InterpretLanguageFunctions(Pass):
    """Call interpreted copies of the ``triton.language`` functions that are themselves kernels.

    Constraint: ``tl.max``, ``tl.sum``, ``tl.softmax`` and the rest of
    ``triton.language.standard`` are ``triton.jit`` functions, decorated when
    Triton is imported; unless ``TRITON_INTERPRET=1`` was set before that,
    calling one from an interpreted kernel raises "Cannot call @triton.jit'd
    outside of the scope of a kernel". Setting the variable would turn every
    kernel of the process, the CUDA variant's too, into an interpreted one.

    Each ``tl.name(...)`` whose target is a ``triton.jit`` function in the
    installed Triton becomes ``ninetoothed_interpreted_name(...)``, bound once
    at module level to ``InterpretedFunction(tl.name.fn)``.
    """

    def visit_Call(self, node):
        self.generic_visit(node)

        name = self.resolve(node.func)

        if name is not None and name.startswith("triton.language."):
            function_name = name.removeprefix("triton.language.")

            if isinstance(
                getattr(triton.language, function_name, None),
                triton.runtime.JITFunction,
            ):
                self.interpreted.add(function_name)
                node.func = ast.Name(
                    f"ninetoothed_interpreted_{function_name}", ast.Load()
                )
                self.rewrote()

        return node

    def run(self, tree):
        self.interpreted = set()

        return super().run(tree)

    def finish(self, tree):
        insert_after_imports(
            tree,
            [
                ast.parse(
                    f"ninetoothed_interpreted_{name} = "
                    f"triton.runtime.interpreter.InterpretedFunction(tl.{name}.fn)"
                ).body[0]
                for name in sorted(self.interpreted)
            ],
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
    """

    def visit_FunctionDef(self, node):
        if any(
            self.resolve(decorator) == "triton.jit" for decorator in node.decorator_list
        ):
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


class _RangeBoundWrapper(ast.NodeTransformer):
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


class BoolMasks(MaskPass):
    """Give every load and store mask boolean data.

    Constraint: Triton 3.9's interpreter computes ``scalar_int1 & block_int1``
    with ``int32`` data while typing it ``int1`` (reproduced on a 5-line
    kernel: ``(pid < n) & (tl.arange(0, B) < B)`` holds ``int32`` data), and
    its ``load``/``store`` then refuse the mask ("mask has unsupported
    dtype"). Compiled Triton is not affected. NineToothed's CUDA masks start
    with a block term, so the CPU variant rarely meets this; the NPU
    variant's masks end with scalar terms (``ScalarizeTileLowerBounds``), so
    its emulation always does.

    Each ``mask=m`` becomes ``mask=(m) != 0``.
    """

    def rewrite_mask(self, mask):
        self.rewrote()

        # A cast to the type the mask already has is a no-op; a comparison
        # makes new boolean data.
        return ast.Compare(mask, [ast.NotEq()], [ast.Constant(0)])


class FixAutotuneConfig(Pass):
    """Replace the autotuner with one config, chosen without a benchmarker.

    Triton's autotuner times each config on the device, which the interpreter
    cannot do meaningfully. The interpreter runs programs one after another,
    each as NumPy operations over a whole tile, so the config with the most
    elements per program (the largest product of block sizes; the first one on
    ties) runs fastest. ``name = triton.autotune(configs, key)(kernel)``
    becomes ``name = kernel`` and each launch ``name[grid](...)`` passes the
    chosen block sizes as keywords.
    """

    def visit_Module(self, node):
        self._chosen = {}

        for statement in autotune_assignments(node):
            self._chosen[statement.targets[0].id] = max(
                autotune_block_sizes(statement),
                key=lambda sizes: math.prod(sizes.values()),
            )
            statement.value = statement.value.args[0]
            self.rewrote()

        self.generic_visit(node)

        return node

    def visit_Call(self, node):
        self.generic_visit(node)

        if (
            isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in self._chosen
        ):
            node.keywords.extend(
                ast.keyword(name, ast.Constant(value))
                for name, value in self._chosen[node.func.value.id].items()
            )

        return node


#: The CPU pipeline.
PIPELINE = (
    IndexLoopBounds,
    BoolMasks,
    BindLanguageModule,
    InterpretKernels,
    InterpretLanguageFunctions,
    FixAutotuneConfig,
)
