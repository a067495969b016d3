"""ninetoothed-ascend: every NineToothed kernel, written once, for NVIDIA GPUs, Ascend NPUs and the CPU.

``make`` and ``jit`` take what NineToothed's take and return a handle whose
calls run the CUDA, NPU or CPU variant of the kernel, chosen per call from the
device of the tensor arguments.
"""

from ninetoothed_ascend.jit import (
    VARIANTS,
    Handle,
    MixedDevicesError,
    VariantUnavailableError,
    jit,
    make,
)

__version__ = "0.1.0"

__all__ = [
    "VARIANTS",
    "Handle",
    "MixedDevicesError",
    "VariantUnavailableError",
    "jit",
    "make",
]
