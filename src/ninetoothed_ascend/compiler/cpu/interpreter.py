"""The CPU variant: NineToothed's source made runnable by Triton's interpreter."""

import ast
import math

import triton
import triton.language
import triton.runtime.interpreter

from ninetoothed_ascend.compiler.generated import block_sizes
from ninetoothed_ascend.compiler.libdevice import MapLibdevice
from ninetoothed_ascend.compiler.npu.libdevice import CUDA_LIBDEVICE_MODULES
from ninetoothed_ascend.compiler.passes import (
    LoadWrapperPass,
    Pass,
    RewriteError,
    convert_if_dtype,
)
from ninetoothed_ascend.compiler.syntax import (
    Transformer,
    insert_after_imports,
    keyword,
)
from ninetoothed_ascend.libdevice_table import ASCEND_FUNCTIONS


class InterpretLibdevice(MapLibdevice):
    """Compute CUDA Triton's libdevice functions with core ``triton.language`` and NumPy.

    Constraint: Triton's interpreter runs no libdevice function: each is an
    ``extern_elementwise``, which ``interpreter_builder`` refuses with
    "extern_elementwise not supported in interpreter mode" (Triton 3.9,
    triton/runtime/interpreter.py), and ``_patch_lang`` patches
    ``triton.language`` and ``triton.language.math`` only. NineToothed
    kernels reach libdevice through ``ninetoothed.language.libdevice``, that
    is ``triton.language.extra.libdevice``.

    Each call ``libdevice.NAME(...)`` becomes ``ninetoothed_emulated_NAME(...)``,
    a module-level helper computing the portable meaning of triton-ascend's
    function of that name, for the functions whose CUDA meaning and result
    dtype are the same (:data:`CUDA_LIBDEVICE_FUNCTIONS`); any other
    libdevice call fails the CPU variant with an error naming the function.
    """

    MODULES = tuple(module.rpartition(".")[0] for module in CUDA_LIBDEVICE_MODULES)
    DEVICE_TYPE = "cpu"
    DESCRIPTION = "CUDA Triton's libdevice"
    FUNCTIONS = frozenset(
        name
        for name, function in ASCEND_FUNCTIONS.items()
        if function.portable is not None and function.cuda_namesake
    )


#: CUDA libdevice functions the CPU variant computes: those of
#: :data:`~ninetoothed_ascend.libdevice_table.ASCEND_FUNCTIONS` with a
#: portable meaning and a CUDA namesake of that meaning.
CUDA_LIBDEVICE_FUNCTIONS = InterpretLibdevice.FUNCTIONS


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


#: The dotted names of the ``triton.language`` functions that are
#: ``triton.jit`` functions in the installed Triton (``tl.max``, ``tl.sum``, ...).
_LANGUAGE_KERNELS = frozenset(
    f"triton.language.{name}"
    for name, value in vars(triton.language).items()
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
    """

    TRIGGERS = _LANGUAGE_KERNELS

    def visit_Call(self, node):
        self.generic_visit(node)

        name = self.resolve(node.func)

        if name in self.TRIGGERS:
            function_name = name.removeprefix("triton.language.")
            self.interpreted.add(function_name)
            node.func = ast.Name(f"ninetoothed_interpreted_{function_name}", ast.Load())
            self.rewrote()

        return node

    def run(self, tree, module=None):
        self.interpreted = set()

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
                        f"ninetoothed_ascend_interpreted(tl.{name})"
                    ).body[0]
                    for name in sorted(self.interpreted)
                ),
            ],
        )


class WidenBfloat16(LoadWrapperPass):
    """Compute on bf16 blocks in fp32.

    Constraint: Triton's interpreter (3.6, 3.9) holds bf16 blocks as their
    raw 16-bit patterns in NumPy ``uint16`` arrays, and its arithmetic and
    ``dot`` work on those integers: a bf16 ``x + 1`` is off by up to 2e38
    (measured here on the add example). Its casts convert properly.

    In kernels, every ``triton.language.load(...)`` becomes
    ``ninetoothed_float32_if_bfloat16(load(...))``, which turns bf16 blocks
    into fp32 (exactly) and leaves others alone, and every dtype a value is
    converted to or created with (``x.to(d)``, ``cast(x, d)``,
    ``dtype=d``) becomes ``ninetoothed_float32_if_bfloat16_dtype(d)``, so no
    bf16 block is made inside the kernel; stores convert back to the
    tensor's dtype. Results are the fp32 computation rounded to bf16 once,
    which is at least as accurate as bf16 arithmetic.
    """

    WRAPPER = "ninetoothed_float32_if_bfloat16"
    DTYPE_WRAPPER = "ninetoothed_float32_if_bfloat16_dtype"
    WRAPPER_SOURCE = (
        convert_if_dtype(WRAPPER, "bfloat16", "float32")
        + f"""

def {DTYPE_WRAPPER}(dtype):
    dtype = getattr(dtype, "value", dtype)
    return triton.language.float32 if dtype == triton.language.bfloat16 else dtype
"""
    )

    def visit_Call(self, node):
        node = super().visit_Call(node)

        if not self.in_kernel or not isinstance(node, ast.Call):
            return node

        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "to"
            and node.args
        ):
            node.args[0] = self._widened(node.args[0])
        elif self.is_call_to(node, "triton.language.cast") and len(node.args) > 1:
            node.args[1] = self._widened(node.args[1])

        dtype = keyword(node, "dtype")

        if dtype is not None:
            dtype.value = self._widened(dtype.value)

        return node

    def _widened(self, dtype):
        self._wrapped = True
        self.rewrote()

        return ast.Call(ast.Name(self.DTYPE_WRAPPER, ast.Load()), [dtype], [])


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

    TRIGGERS = ("range",)

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


class FixAutotuneConfig(Pass):
    """Replace the autotuner with one config, chosen without a benchmarker.

    Triton's autotuner times each config on the device, which the interpreter
    cannot do meaningfully. The interpreter runs programs one after another,
    each as NumPy operations over a whole tile, so the config with the most
    elements per program (the largest product of block sizes; the first one on
    ties) runs fastest. ``name = triton.autotune(configs, key)(kernel)``
    becomes ``name = kernel`` and each launch ``name[grid](...)`` passes the
    chosen block sizes as keywords. An autotuner made by a module-level
    factory (``def name(): return triton.autotune(...)(kernel)``, the NPU
    variant's :class:`~ninetoothed_ascend.ascendify.DeferAutotune`, which
    the CPU emulation runs) is replaced where it is made, and each launch
    ``name()[grid](...)`` likewise.
    """

    TRIGGERS = ("triton.autotune",)

    def visit_Module(self, node):
        self._chosen = {}
        self._factories = set()

        for statement in node.body:
            holder, name = self._autotuner(statement)

            if holder is None:
                continue

            if holder is not statement:
                self._factories.add(name)

            self._chosen[name] = max(
                block_sizes(holder.value.func),
                key=lambda sizes: math.prod(sizes.values()),
            )
            holder.value = holder.value.args[0]
            self.rewrote()

        # Launches are host code: the kernels, most of the module, are not
        # walked (while this pass runs before InterpretKernels, which leaves
        # no ``triton.jit`` kernel to tell apart).
        for statement in self.module.host_statements():
            self.visit(statement)

        return node

    def _autotuner(self, statement):
        """``(node whose value is the autotuner, name launched)`` for a module-level statement that makes one, else ``(None, None)``."""

        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            holder, name = statement, statement.targets[0].id
        elif (
            isinstance(statement, ast.FunctionDef)
            and not statement.args.args
            and len(statement.body) == 1
            and isinstance(statement.body[0], ast.Return)
        ):
            holder, name = statement.body[0], statement.name
        else:
            return None, None

        if not self.module.is_autotuned(holder.value):
            return None, None

        return holder, name

    def visit_Call(self, node):
        self.generic_visit(node)

        launched = node.func.value if isinstance(node.func, ast.Subscript) else None

        if (
            isinstance(launched, ast.Call)
            and isinstance(launched.func, ast.Name)
            and launched.func.id in self._factories
            and not launched.args
        ):
            launched = launched.func

        if isinstance(launched, ast.Name) and launched.id in self._chosen:
            node.keywords.extend(
                ast.keyword(name, ast.Constant(value))
                for name, value in self._chosen[launched.id].items()
            )

        return node
