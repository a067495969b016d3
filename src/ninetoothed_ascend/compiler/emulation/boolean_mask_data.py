"""The emulation pass :class:`BooleanMaskData`."""

import ast

from ninetoothed_ascend.compiler.passes import MaskPass


class BooleanMaskData(MaskPass):
    """Make the interpreter hold every load and store mask as NumPy booleans.

    Constraint: Triton 3.9's interpreter gives the result of a comparison
    the dtype of its operands in its ``TensorHandle`` (``binary_op`` keeps
    ``lhs.dtype``), so broadcasting a scalar comparison such as ``index >=
    0`` against a block splats ``int32`` data, and ``&`` with it yields an
    ``int32`` array; a masked load then fails with "mask has unsupported
    dtype" (measured here, ``tests/compiler/emulation/test_emulation.py::
    test_without_boolean_mask_data_the_interpreter_refuses_the_npu_mask``).
    NineToothed's masks start with ``True &``, which hides this; the NPU
    variant's start with a scalar comparison once
    :class:`~ninetoothed_ascend.compiler.npu.fold_true_mask.FoldTrueMask` and
    :class:`~ninetoothed_ascend.compiler.npu.scalarize_tile_lower_bounds.ScalarizeTileLowerBounds` have run.

    Each ``mask=m`` becomes ``mask=m != 0``: the same predicate, computed as
    booleans. Interpreter only; it is not part of the CUDA emulation.

    :Rewrites: `mask=m` → `mask=m != 0`: the interpreter keeps scalar
        comparisons' operand dtype and refuses the resulting `int32` mask
    """

    def rewrite_mask(self, mask):
        self.rewrote()

        return ast.Compare(left=mask, ops=[ast.NotEq()], comparators=[ast.Constant(0)])
