"""The CPU pass :class:`InterpretLibdevice`."""

from ninetoothed_ascend.compiler.libdevice_table import ASCEND_FUNCTIONS
from ninetoothed_ascend.compiler.map_libdevice import MapLibdevice
from ninetoothed_ascend.compiler.npu.remap_libdevice import CUDA_LIBDEVICE_MODULES


class InterpretLibdevice(MapLibdevice):
    """Compute CUDA Triton's libdevice functions with core ``triton.language`` and NumPy.

    Constraint: Triton's interpreter runs no libdevice function: each is an
    ``extern_elementwise``, which ``interpreter_builder`` refuses with
    "extern_elementwise not supported in interpreter mode" (Triton 3.9,
    triton/runtime/interpreter.py), and ``_patch_lang`` patches
    ``triton.language`` and ``triton.language.math`` only. NineToothed
    kernels reach libdevice through ``ninetoothed.language.libdevice``, that
    is ``triton.language.extra.libdevice``.

    Each call ``libdevice.NAME(...)`` becomes ``ninetoothed_emulated_NAME(...)``,
    a module-level helper computing the portable meaning of triton-ascend's
    function of that name, for the functions whose CUDA meaning and result
    dtype are the same (:data:`CUDA_LIBDEVICE_FUNCTIONS`); any other
    libdevice call fails the CPU variant with an error naming the function.

    :Constraint: the interpreter runs no libdevice function
        ("extern_elementwise not supported in interpreter mode"); CUDA
        libdevice calls become helpers over core `tl` and NumPy
    :Source: triton/runtime/interpreter.py (3.9)
    """

    MODULES = tuple(module.rpartition(".")[0] for module in CUDA_LIBDEVICE_MODULES)
    DEVICE_TYPE = "cpu"
    DESCRIPTION = "CUDA Triton's libdevice"
    FUNCTIONS = frozenset(
        name
        for name, function in ASCEND_FUNCTIONS.items()
        if function.portable is not None and function.cuda_namesake
    )


#: CUDA libdevice functions the CPU variant computes: those of
#: :data:`~ninetoothed_ascend.compiler.libdevice_table.ASCEND_FUNCTIONS` with a
#: portable meaning and a CUDA namesake of that meaning.
CUDA_LIBDEVICE_FUNCTIONS = InterpretLibdevice.FUNCTIONS
