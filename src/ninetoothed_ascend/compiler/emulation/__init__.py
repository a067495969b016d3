"""Emulation: the NPU variant, with its Ascend-only symbols mapped to portable ones, run on a CUDA GPU or the CPU.

The NPU variant is NineToothed's source after every Ascend rewrite
(:data:`ninetoothed_ascend.compiler.pipelines.NPU`). It cannot run without an
NPU, so what those rewrites do to a kernel's *numbers* is checked by
running the same source elsewhere: the emulation pipelines
(:data:`ninetoothed_ascend.compiler.pipelines.EMULATIONS`, run by
:func:`~ninetoothed_ascend.compiler.pipelines.emulate`) take the NPU
variant's text unchanged and map only the symbols that exist on Ascend alone,

* triton-ascend's libdevice (``triton.language.extra.cann`` or
  ``.ascend``, imported by :class:`~ninetoothed_ascend.compiler.npu.remap_libdevice.RemapLibdevice`):
  each function becomes a module-level helper ``ninetoothed_emulated_NAME``
  with the same meaning, built from CUDA Triton's libdevice
  (``triton.language.extra.libdevice``) or core ``triton.language`` on a
  CUDA GPU, and from core ``triton.language`` or NumPy on the CPU, where
  Triton's interpreter cannot call libdevice at all;
* ``input_precision="hf32"`` in ``dot`` (from
  :class:`~ninetoothed_ascend.compiler.npu.use_hf32_in_dot.UseHf32InDot`): ``"tf32"`` on a CUDA
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

import os

from ninetoothed_ascend.compiler.npu.remap_libdevice import ASCEND_LIBDEVICE_MODULES

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
