"""ninetoothed-ascend: every NineToothed kernel, written once, for NVIDIA GPUs, Ascend NPUs and the CPU.

``make`` and ``jit`` take what NineToothed's take and return a handle whose
calls run the CUDA, NPU or CPU variant of the kernel, chosen per call from the
device of the tensor arguments.

Importing the package also activates the transparent import
(:mod:`ninetoothed_ascend.activation`): ``ninetoothed.make`` and
``ninetoothed.jit`` then build the same handles, in every module, and kernels
made by plain NineToothed before the import dispatch per call too.
:func:`disable` restores plain NineToothed.
"""

from ninetoothed_ascend import manifest as _manifest
from ninetoothed_ascend.activation import activate, disable, disabled, is_active
from ninetoothed_ascend.jit import (
    VARIANTS,
    Handle,
    MixedDevicesError,
    VariantUnavailableError,
    jit,
    make,
)

__version__ = "0.1.0"

activate()

# ``ninetoothed-ascend record`` asks each process of the recorded program for its kernels.
_manifest.record_from_environment()

__all__ = [
    "VARIANTS",
    "Handle",
    "MixedDevicesError",
    "VariantUnavailableError",
    "activate",
    "disable",
    "disabled",
    "is_active",
    "jit",
    "make",
]
