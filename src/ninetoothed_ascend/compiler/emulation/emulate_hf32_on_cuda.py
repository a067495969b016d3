"""The emulation pass :class:`EmulateHf32OnCuda`."""

from ninetoothed_ascend.compiler.emulation.hf32 import EmulateHf32


class EmulateHf32OnCuda(EmulateHf32):
    """Use tf32 where the NPU variant asks ``dot`` for hf32.

    Constraint: hf32 exists only on Ascend (CUDA Triton 3.9 allows ``tf32``,
    ``tf32x3`` and ``ieee``). tf32, fp32 operands rounded to a 10-bit
    mantissa and accumulated in fp32, is the nearest CUDA mode to hf32 and
    the one :class:`~ninetoothed_ascend.compiler.npu.use_hf32_in_dot.UseHf32InDot` replaced.

    :Rewrites: `hf32` → `tf32`
    """

    PRECISION = "tf32"
