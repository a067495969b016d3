"""The emulation pass :class:`EmulateLibdeviceOnCuda`."""

from ninetoothed_ascend.compiler.map_libdevice import MapLibdevice
from ninetoothed_ascend.compiler.npu.remap_libdevice import ASCEND_LIBDEVICE_MODULES


class EmulateLibdeviceOnCuda(MapLibdevice):
    """Map triton-ascend's libdevice to CUDA Triton's libdevice and core ``triton.language``.

    Constraint: the NPU variant imports ``triton.language.extra.cann`` or
    ``.ascend`` (:class:`~ninetoothed_ascend.compiler.npu.remap_libdevice.RemapLibdevice`),
    which exist only in triton-ascend. Each call ``libdevice.NAME(...)``
    becomes ``ninetoothed_emulated_NAME(...)``, a ``triton.jit`` helper that
    computes the CUDA expression of the function's portable meaning
    (:attr:`~ninetoothed_ascend.compiler.libdevice_table.AscendFunction.portable`),
    in fp32 when it is ``upcast`` (triton-ascend has fp16 variants, CUDA's
    libdevice fp32 and fp64 ones only), cast back to the arguments' dtype.
    The Ascend import is removed and ``from triton.language.extra import
    libdevice`` added under a name of its own.

    :Rewrites: triton-ascend's libdevice → CUDA libdevice or core `tl`
    """

    MODULES = ASCEND_LIBDEVICE_MODULES
    DEVICE_TYPE = "cuda"
    # The helpers' import of CUDA Triton's libdevice.
    INTRODUCES = ("triton.language.extra.libdevice",)
    DESCRIPTION = "triton-ascend 3.2.0's libdevice"
