"""Compute in fp32 where a kernel asks for fp64."""

import ast

from ninetoothed_ascend.compiler.passes import LoadWrapperPass, convert_if_dtype
from ninetoothed_ascend.compiler.syntax import clone

#: The module-level ``triton.jit`` function that demotes a loaded fp64 block.
DEMOTE = "ninetoothed_ascend_float32_if_float64"

_DEMOTE_SOURCE = convert_if_dtype(DEMOTE, "float64", "float32")


class LowerFloat64(LoadWrapperPass):
    """Turn fp64 arithmetic in kernels into fp32; fp64 stays only in memory.

    Constraint: Ascend's vector units have no fp64 arithmetic, and
    triton-ascend 3.2's frontend refuses every cast to or from fp64 ("[fp8,
    fp64] is unsupported on Ascend for now", ``cast`` in
    triton/triton_patch/language/semantic.py, unless compiling for the
    910_95); reproduced by
    ``tests/compiler/npu/test_lower_float64.py::test_fp64_fails_the_frontend_or_computes_in_fp64_without_the_pass``.
    triton-ascend's op support table (docs/sources/python-api/outline.md) has
    no fp64 column, and its dtype table (``op_dtype_config.py``, PR #2313)
    lists fp64 as unsupported on A2 and A5.

    In each ``triton.jit`` function:

    - every ``triton.language.float64`` (``cast(x, float64)``,
      ``x.to(float64)``, ``zeros(..., dtype=float64)``) becomes
      ``triton.language.float32``;
    - every ``triton.language.load(...)`` becomes
      ``ninetoothed_ascend_float32_if_float64(load(...))``, a ``triton.jit``
      function whose ``if`` on the block's dtype the frontend folds: blocks
      loaded from fp64 tensors are computed on in fp32, the others are left
      as they are (no operation is emitted for them). The passes between
      this one and
      :class:`~ninetoothed_ascend.compiler.npu.access_float64_as_bits.AccessFloat64AsBits`
      see each load as written, inside it (the UB model costs it);
      ``AccessFloat64AsBits`` then makes each wrapped load one that
      converts fp64 bits itself, since BiShengIR 1.2.0 converts no fp64
      value ("unsupported datatype for arith::TruncFOp to hfusion"), and
      :class:`~ninetoothed_ascend.compiler.npu.compensate_float64_cancellation.CompensateFloat64Cancellation`
      keeps the digits a difference with a constant would cancel;
    - every pointer element type read in a kernel (``p.type.element_ty``,
      ``p.dtype.element_ty``: NineToothed's ``tensor.dtype.dtype``) becomes
      ``float32 if <it> == float64 else <it>``, which the frontend folds:
      ntops' acosh casts its constants to its output's element type, a
      cast to fp64 the frontend refuses.

    fp64 tensors stay fp64 in memory and are stored back as fp64. Scalars
    need nothing: NineToothed passes Python floats, which Triton types as
    fp32.

    Precision: results of kernels on fp64 tensors, or that ask for fp64
    intermediates, are fp32-accurate (about 7 significant digits, range
    about 1e-38 to 3e38), not fp64-accurate.

    :Constraint: Ascend vector units have no fp64; triton-ascend 3.2's `cast`
        refuses fp64 ("[fp8, fp64] is unsupported on Ascend for now")
    :Source: triton-ascend `triton_patch/language/semantic.py` (`cast`); op
        support table `docs/sources/python-api/outline.md` (no fp64 column);
        `op_dtype_config.py` (PR #2313);
        `tests/compiler/npu/test_lower_float64.py`
    :Rewrites: `tl.float64` in kernels becomes `tl.float32`; every load is
        wrapped in a `triton.jit` function that demotes fp64 blocks to fp32 (an
        `if` on the dtype, folded; nothing emitted for other dtypes), which
        `AccessFloat64AsBits` makes a load of fp64 bits. fp64 tensors stay
        fp64 in memory. **Precision: fp64 kernels compute with fp32 accuracy
        (about 7 digits, range about 1e±38)**
    """

    WRAPPER = DEMOTE
    WRAPPER_SOURCE = _DEMOTE_SOURCE
    PRECISION = (
        "on fp64 tensors, and for fp64 intermediates, this kernel computes in "
        "fp32 (about 7 significant digits): its fp64 results can miss an fp64 "
        "tolerance"
    )

    def visit_Attribute(self, node):
        if self.in_kernel and self.resolve(node) == "triton.language.float64":
            self.rewrote()

            return ast.copy_location(
                ast.parse("triton.language.float32", mode="eval").body, node
            )

        self.generic_visit(node)

        if self.in_kernel and _is_element_type(node):
            # A pointer's element type, read at trace time: fp64 for an fp64
            # tensor, and so a cast to it (ntops' ``cast(1.0, dtype)``) is
            # refused. Compared, not rewritten, so other dtypes are kept.
            self.rewrote()
            chosen = ast.parse(
                "triton.language.float32 if ELEMENT == triton.language.float64 "
                "else ELEMENT",
                mode="eval",
            ).body
            chosen.test.left = node
            chosen.orelse = clone(node)

            return ast.copy_location(chosen, node)

        return node


def _is_element_type(node):
    # ``x.type.element_ty`` or ``x.dtype.element_ty``: what NineToothed
    # writes for an application's ``tensor.dtype.dtype`` (the pointer's).
    return (
        node.attr == "element_ty"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr in ("type", "dtype")
    )
