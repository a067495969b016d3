"""The emulation pass :class:`EmulateHf32OnCpu`."""

from ninetoothed_ascend.compiler.emulation.hf32 import EmulateHf32


class EmulateHf32OnCpu(EmulateHf32):
    """Use ieee where the NPU variant asks ``dot`` for hf32.

    Constraint: Triton's interpreter accepts ``tf32``, ``tf32x3`` and
    ``ieee`` and computes every one as an fp32 ``numpy.matmul``
    (``interpreter_builder.create_dot``); ``ieee`` says what it does.

    :Rewrites: `hf32` → `ieee`
    """

    PRECISION = "ieee"
