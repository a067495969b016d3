"""Rewrite NineToothed's generated Triton for triton-ascend: the NPU passes by name.

The NPU variant of a kernel is NineToothed's CUDA source run through these
passes, in the order of :data:`ninetoothed_ascend.compiler.pipelines.NPU`.
Each pass is one Ascend constraint; its docstring states the constraint and
where it is documented or measured. They live in
:mod:`ninetoothed_ascend.compiler.npu`; this module is where users and tests
import them from.
"""

from ninetoothed_ascend.compiler.npu.autotune import DeferAutotune
from ninetoothed_ascend.compiler.npu.autotune_key import FilterAutotuneKey
from ninetoothed_ascend.compiler.npu.clamp import LowerClamp
from ninetoothed_ascend.compiler.npu.dot import UseHf32InDot
from ninetoothed_ascend.compiler.npu.duplicate_configs import MergeDuplicateConfigs
from ninetoothed_ascend.compiler.npu.flat_access import ContiguousFlatAccess
from ninetoothed_ascend.compiler.npu.float64 import LowerFloat64
from ninetoothed_ascend.compiler.npu.grid import PersistentGrid
from ninetoothed_ascend.compiler.npu.imports import ImportStandardModules
from ninetoothed_ascend.compiler.npu.libdevice import RemapLibdevice
from ninetoothed_ascend.compiler.npu.load_broadcast import BroadcastLoadPointer
from ninetoothed_ascend.compiler.npu.loads import FillMaskedLoads
from ninetoothed_ascend.compiler.npu.lower_bounds import ScalarizeTileLowerBounds
from ninetoothed_ascend.compiler.npu.masks import FoldTrueMask, GroupMaskTerms
from ninetoothed_ascend.compiler.npu.math_constants import FoldMathConstants
from ninetoothed_ascend.compiler.npu.padded_lower_bounds import (
    ScalarizePaddedTileLowerBounds,
)
from ninetoothed_ascend.compiler.npu.read_back import SynchronizeReadBack
from ninetoothed_ascend.compiler.npu.ub.configs import FitUnifiedBuffer
from ninetoothed_ascend.compiler.npu.ub.sub_blocks import SplitSubBlocks
from ninetoothed_ascend.compiler.passes import (
    Pass,
    PipelineError,
    RewriteError,
    Rewritten,
    run_pipeline,
)

__all__ = [
    "BroadcastLoadPointer",
    "ContiguousFlatAccess",
    "DeferAutotune",
    "FillMaskedLoads",
    "FoldMathConstants",
    "FilterAutotuneKey",
    "FitUnifiedBuffer",
    "FoldTrueMask",
    "GroupMaskTerms",
    "ImportStandardModules",
    "LowerClamp",
    "LowerFloat64",
    "MergeDuplicateConfigs",
    "Pass",
    "PersistentGrid",
    "PipelineError",
    "RemapLibdevice",
    "RewriteError",
    "Rewritten",
    "ScalarizePaddedTileLowerBounds",
    "ScalarizeTileLowerBounds",
    "SplitSubBlocks",
    "SynchronizeReadBack",
    "UseHf32InDot",
    "run_pipeline",
]
