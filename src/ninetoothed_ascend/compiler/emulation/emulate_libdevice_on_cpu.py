"""The emulation pass :class:`EmulateLibdeviceOnCpu`."""

from ninetoothed_ascend.compiler.map_libdevice import MapLibdevice
from ninetoothed_ascend.compiler.npu.remap_libdevice import ASCEND_LIBDEVICE_MODULES


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

    :Rewrites: triton-ascend's libdevice → core `tl` / NumPy
    """

    MODULES = ASCEND_LIBDEVICE_MODULES
    DEVICE_TYPE = "cpu"
    DESCRIPTION = "triton-ascend 3.2.0's libdevice"
