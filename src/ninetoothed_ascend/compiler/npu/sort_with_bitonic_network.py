"""The NPU pass :class:`SortWithBitonicNetwork`."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import insert_after_imports, keyword

#: The module-level ``triton.jit`` function that sorts a block by its dtype.
SORT = "ninetoothed_ascend_sort"

#: The dtypes whose ``tl.sort`` reached BiShengIR's external ``hivmc`` step
#: (ascendnpu-ir 1.2.0, the ``sampling/sort`` example's kernel, 7 x 200):
#: the others fail ``hivm.hir.vsort``'s verifier.
VSORT_DTYPES = ("float16", "bfloat16", "float32", "int8", "int16")

_SORT_SOURCE = f"""
@triton.jit
def {SORT}(x, dim: triton.language.constexpr = None, descending: triton.language.constexpr = False):
    if {" | ".join(f"(x.dtype == triton.language.{dtype})" for dtype in VSORT_DTYPES)}:
        return triton.language.sort(x, len(x.shape) - 1 if dim is None else dim, descending)
    else:
        return triton.language.standard.sort(x, dim, descending)
"""


class SortWithBitonicNetwork(Pass):
    """Sort the blocks BiShengIR's ``vsort`` refuses (32- and 64-bit integers) with Triton's own bitonic network.

    Constraint: triton-ascend 3.2.0 replaces ``triton.language.sort`` with a
    ``tt.sort`` operation (``triton/triton_patch/language/core.py``,
    ``sort``) that BiShengIR lowers to ``hivm.hir.vsort``, whose verifier
    takes 16- and 32-bit floats only: "'hivm.hir.vsort' op failed to verify
    that operand at idx 0 and 1 should have element type 16-bit float or
    32-bit float" (ascendnpu-ir 1.2.0). ``int8``, ``int16`` and ``bf16``
    blocks are converted on the way and reach ``hivmc``; ``int32`` and
    ``int64`` fail (measured: ``ninetoothed-ascend check`` of the
    ``sampling/sort`` example's kernel in each dtype). ntops' ``sort`` packs
    each value and its index into one ``int64`` key and sorts the keys: all
    its launches failed BiShengIR.

    Every ``triton.language.sort(x, dim, descending)`` in a kernel becomes
    ``ninetoothed_ascend_sort(x, dim, descending)``, a ``triton.jit``
    function added to the module whose ``if`` on the block's dtype the
    frontend folds: a dtype of :data:`VSORT_DTYPES` is sorted by
    triton-ascend's ``tt.sort`` as before; any other by
    ``triton.language.standard.sort``, the bitonic sorting network that
    triton-ascend 3.2.0 still ships from Triton 3.2 (``triton/language/standard.py``:
    compare-and-swap rounds of ``reshape``, ``sum``, ``xor`` and ``where``),
    which is what ``tl.sort`` is on CUDA Triton, so the CUDA variant sorts
    the same way. Exact: a sorting network orders every dtype its
    comparisons order. ntops' ``sort`` (``int64`` keys of 16 to 128 lanes)
    reaches ``hivmc`` with it.

    :Constraint: triton-ascend 3.2.0 makes `tl.sort` a `tt.sort` that BiShengIR
        lowers to `hivm.hir.vsort`, whose verifier takes 16- and 32-bit floats
        only ("operand at idx 0 and 1 should have element type 16-bit float or
        32-bit float"): `int32` and `int64` blocks fail BiShengIR (`int8`,
        `int16`, `bf16` are converted and reach `hivmc`); ntops' `sort` sorts
        `int64` keys
    :Source: triton-ascend 3.2.0 `triton/triton_patch/language/core.py`
        (`sort`); measured with ascendnpu-ir 1.2.0: `ninetoothed-ascend check`
        of the `sampling/sort` example's kernel in each dtype, ntops' sort
        launches; `tests/compiler/npu/test_sort_with_bitonic_network.py`
    :Rewrites: `tl.sort(x, dim, descending)` becomes
        `ninetoothed_ascend_sort(x, dim, descending)`, a helper whose `if` on
        the dtype the frontend folds: fp16, bf16, fp32, int8, int16 go to
        triton-ascend's `tt.sort` as before, every other dtype to
        `triton.language.standard.sort`, the bitonic network triton-ascend
        3.2.0 ships from Triton 3.2 (what `tl.sort` is on CUDA Triton)
    """

    TRIGGERS = ("triton.language.sort",)
    INTRODUCES = ("triton.language.standard.sort",)

    def run(self, tree, module=None):
        self._used = False

        return super().run(tree, module)

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self.is_call_to(node, "triton.language.sort"):
            return node

        arguments = list(node.args)

        for name in ("x", "dim", "descending")[len(arguments) :]:
            argument = keyword(node, name)

            if argument is not None:
                arguments.append(argument.value)
            elif name == "descending":
                arguments.append(ast.Constant(False))
            else:
                arguments.append(ast.Constant(None))

        self._used = True
        self.rewrote()

        return ast.copy_location(
            ast.Call(ast.Name(SORT, ast.Load()), arguments, []), node
        )

    def finish(self, tree):
        if self._used:
            insert_after_imports(tree, ast.parse(_SORT_SOURCE).body)
