"""Emulation: the NPU variant, with its Ascend-only symbols mapped to portable ones, run on a CUDA GPU or the CPU.

The NPU variant is NineToothed's source after every Ascend rewrite
(:data:`ninetoothed_ascend.compiler.pipelines.NPU`). It cannot run without an
NPU, so what those rewrites do to a kernel's *numbers* is checked by
running the same source elsewhere: the emulation pipelines
(:data:`ninetoothed_ascend.compiler.pipelines.EMULATIONS`, run by
:func:`~ninetoothed_ascend.compiler.pipelines.emulate`) take the NPU
variant's text unchanged and map only the symbols that exist on Ascend alone,

* triton-ascend's libdevice (``triton.language.extra.cann`` or
  ``.ascend``, imported by :class:`~ninetoothed_ascend.ascendify.RemapLibdevice`):
  each function becomes a module-level helper ``ninetoothed_emulated_NAME``
  with the same meaning, built from CUDA Triton's libdevice
  (``triton.language.extra.libdevice``) or core ``triton.language`` on a
  CUDA GPU, and from core ``triton.language`` or NumPy on the CPU, where
  Triton's interpreter cannot call libdevice at all;
* ``input_precision="hf32"`` in ``dot`` (from
  :class:`~ninetoothed_ascend.ascendify.UseHf32InDot`): ``"tf32"`` on a CUDA
  GPU, ``"ieee"`` on the CPU;

and, for the CPU, run the CPU variant's pipeline
(:data:`ninetoothed_ascend.compiler.pipelines.CPU`) on top. Every other
line, the masks, fills, lower bounds and clamps the Ascend passes wrote,
runs as the NPU variant has it. A symbol that is still Ascend-only
afterwards fails the emulation with an error naming it
(:class:`RejectAscendOnly`), so a new Ascend pass cannot slip past it.

Emulated sources are cheap to derive and are kept in memory only
(:meth:`ninetoothed_ascend.Handle.emulated`).
"""

import ast
import os

from ninetoothed_ascend.compiler.libdevice import MapLibdevice
from ninetoothed_ascend.compiler.npu.libdevice import ASCEND_LIBDEVICE_MODULES
from ninetoothed_ascend.compiler.passes import MaskPass, Pass, RewriteError
from ninetoothed_ascend.compiler.syntax import keyword, walk

#: Set to ``1`` to make CUDA and CPU tensors run the emulated NPU variant
#: instead of the CUDA and CPU variants. Read when a handle first dispatches
#: to a device type.
ENVIRONMENT_VARIABLE = "NINETOOTHED_ASCEND_EMULATE_NPU"

#: Module prefixes that exist only in triton-ascend.
ASCEND_ONLY_MODULES = (*ASCEND_LIBDEVICE_MODULES, "triton.triton_patch")


def emulation_requested():
    """Whether ``$NINETOOTHED_ASCEND_EMULATE_NPU`` asks for emulation (``1``, ``true``, ``yes``, ``on``)."""

    return os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower() in (
        "1",
        "true",
        "yes",
        "on",
    )


class EmulateLibdeviceOnCuda(MapLibdevice):
    """Map triton-ascend's libdevice to CUDA Triton's libdevice and core ``triton.language``.

    Constraint: the NPU variant imports ``triton.language.extra.cann`` or
    ``.ascend`` (:class:`~ninetoothed_ascend.ascendify.RemapLibdevice`),
    which exist only in triton-ascend. Each call ``libdevice.NAME(...)``
    becomes ``ninetoothed_emulated_NAME(...)``, a ``triton.jit`` helper that
    computes the CUDA expression of the function's portable meaning
    (:attr:`~ninetoothed_ascend.libdevice_table.AscendFunction.portable`),
    in fp32 when it is ``upcast`` (triton-ascend has fp16 variants, CUDA's
    libdevice fp32 and fp64 ones only), cast back to the arguments' dtype.
    The Ascend import is removed and ``from triton.language.extra import
    libdevice`` added under a name of its own.
    """

    MODULES = ASCEND_LIBDEVICE_MODULES
    DEVICE_TYPE = "cuda"
    # The helpers' import of CUDA Triton's libdevice.
    INTRODUCES = ("triton.language.extra.libdevice",)
    DESCRIPTION = "triton-ascend 3.2.0's libdevice"


class EmulateLibdeviceOnCpu(MapLibdevice):
    """Map triton-ascend's libdevice to core ``triton.language`` and NumPy for Triton's interpreter.

    Constraint: Triton's interpreter runs no libdevice function: every one is
    an ``extern_elementwise``, which ``interpreter_builder`` refuses
    ("extern_elementwise not supported in interpreter mode", Triton 3.9
    triton/runtime/interpreter.py; ``_patch_lang`` patches
    ``triton.language`` and ``triton.language.math`` only). Each call
    becomes ``ninetoothed_emulated_NAME(...)``: a ``triton.jit`` helper over
    core ``triton.language`` where one has the meaning (``exp``, ``sqrt``,
    ``fma``, ...), else a Python function that computes it with NumPy in
    fp64 on the interpreter's arrays
    (:func:`~ninetoothed_ascend.runtime.numpy_elementwise`).
    """

    MODULES = ASCEND_LIBDEVICE_MODULES
    DEVICE_TYPE = "cpu"
    DESCRIPTION = "triton-ascend 3.2.0's libdevice"


def _is_ascend_only(name):
    return name is not None and any(
        name == module or name.startswith(f"{module}.")
        for module in ASCEND_ONLY_MODULES
    )


class _EmulateHf32(Pass):
    PRECISION = None

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self.is_call_to(node, "triton.language.dot"):
            return node

        precision = keyword(node, "input_precision")
        value = (
            precision.value
            if precision is not None
            else node.args[3]
            if len(node.args) > 3
            else None
        )

        # ``UseHf32InDot`` writes hf32 as a literal or as a branch of a
        # conditional on the operands' dtypes: every hf32 literal of the
        # argument is mapped.
        for constant in walk(value) if value is not None else ():
            if isinstance(constant, ast.Constant) and constant.value == "hf32":
                constant.value = self.PRECISION
                self.rewrote()

        return node


class EmulateHf32OnCuda(_EmulateHf32):
    """Use tf32 where the NPU variant asks ``dot`` for hf32.

    Constraint: hf32 exists only on Ascend (CUDA Triton 3.9 allows ``tf32``,
    ``tf32x3`` and ``ieee``). tf32, fp32 operands rounded to a 10-bit
    mantissa and accumulated in fp32, is the nearest CUDA mode to hf32 and
    the one :class:`~ninetoothed_ascend.ascendify.UseHf32InDot` replaced.
    """

    PRECISION = "tf32"


class EmulateHf32OnCpu(_EmulateHf32):
    """Use ieee where the NPU variant asks ``dot`` for hf32.

    Constraint: Triton's interpreter accepts ``tf32``, ``tf32x3`` and
    ``ieee`` and computes every one as an fp32 ``numpy.matmul``
    (``interpreter_builder.create_dot``); ``ieee`` says what it does.
    """

    PRECISION = "ieee"


class RejectAscendOnly(Pass):
    """Fail on any Ascend-only symbol the emulation passes before it left in place.

    Constraint: emulation claims that the emulated source means what the NPU
    variant means, with only the mapped symbols changed. A reference to a
    module that exists only in triton-ascend (:data:`ASCEND_ONLY_MODULES`)
    or an ``hf32`` precision still present means an NPU pass emits something
    this module does not know how to emulate: the emulation stops and names
    it instead of running something else.
    """

    def visit_Attribute(self, node):
        name = self.resolve(node)

        if _is_ascend_only(name):
            raise RewriteError(
                f"`{name}` exists only in triton-ascend and has no emulation.",
                "Add its portable meaning to ninetoothed_ascend.compiler.emulation.",
            )

        self.generic_visit(node)

        return node

    def visit_Constant(self, node):
        if node.value == "hf32":
            raise RewriteError(
                "`hf32` is left outside a `dot` input precision.",
                "Add its portable meaning to ninetoothed_ascend.compiler.emulation.",
            )

        return node


class BooleanMaskData(MaskPass):
    """Make the interpreter hold every load and store mask as NumPy booleans.

    Constraint: Triton 3.9's interpreter gives the result of a comparison
    the dtype of its operands in its ``TensorHandle`` (``binary_op`` keeps
    ``lhs.dtype``), so broadcasting a scalar comparison such as ``index >=
    0`` against a block splats ``int32`` data, and ``&`` with it yields an
    ``int32`` array; a masked load then fails with "mask has unsupported
    dtype" (measured here, ``tests/test_emulation.py::
    test_without_boolean_mask_data_the_interpreter_refuses_the_npu_mask``).
    NineToothed's masks start with ``True &``, which hides this; the NPU
    variant's start with a scalar comparison once
    :class:`~ninetoothed_ascend.ascendify.FoldTrueMask` and
    :class:`~ninetoothed_ascend.ascendify.ScalarizeTileLowerBounds` have run.

    Each ``mask=m`` becomes ``mask=m != 0``: the same predicate, computed as
    booleans. Interpreter only; it is not part of the CUDA emulation.
    """

    def rewrite_mask(self, mask):
        self.rewrote()

        return ast.Compare(left=mask, ops=[ast.NotEq()], comparators=[ast.Constant(0)])
