"""The CPU pass :class:`WidenBfloat16`."""

import ast

from ninetoothed_ascend.compiler.passes import (
    LoadWrapperPass,
    convert_if_dtype,
)
from ninetoothed_ascend.compiler.syntax import (
    keyword,
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

    :Constraint: the interpreter holds bf16 blocks as raw 16-bit patterns and
        does arithmetic and `dot` on those integers (a bf16 `x + 1` is off by
        up to 2e38); its casts are right; so every `load` in a kernel turns
        bf16 blocks to fp32, every dtype converted to or created with
        (`x.to(d)`, `cast(x, d)`, `dtype=d`) is fp32 where it would be bf16,
        and stores convert back
    :Source: measured here (add, gemm examples in bf16)
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
