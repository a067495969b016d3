"""What generated variants import, and nothing else.

Generated code imports only the names here: :class:`OverflowCheck` (NPU
variants whose launch evaluates the UB model), :func:`drop_refused_configs`
(NPU variants' autotuners, which drop a config BiShengIR refuses for the
UB), :func:`interpreted` (CPU
variants calling ``triton.language``'s own ``triton.jit`` functions),
:func:`numpy_elementwise` and :func:`numpy_flip` (emulated CPU variants
calling libdevice). The handle ``make`` returns and its per-call dispatch
live in :mod:`ninetoothed_ascend.jit`.
"""

from ninetoothed_ascend.runtime.interpreter import interpreted
from ninetoothed_ascend.runtime.numpy_libdevice import numpy_elementwise, numpy_flip
from ninetoothed_ascend.runtime.refused_configs import drop_refused_configs
from ninetoothed_ascend.runtime.ub import OverflowCheck, UnifiedBufferOverflowError

__all__ = [
    "OverflowCheck",
    "UnifiedBufferOverflowError",
    "drop_refused_configs",
    "interpreted",
    "numpy_elementwise",
    "numpy_flip",
]
