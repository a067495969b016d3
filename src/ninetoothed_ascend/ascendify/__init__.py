"""Rewrite NineToothed's generated Triton for triton-ascend.

The NPU variant of a kernel is NineToothed's CUDA source run through these
passes, in the order of :data:`ninetoothed_ascend.compiler.pipelines.NPU`.
Each pass is one Ascend constraint; its docstring states the constraint and
where it is documented or measured.
"""

from ninetoothed_ascend.ascendify.autotune import DeferAutotune
from ninetoothed_ascend.ascendify.autotune_key import FilterAutotuneKey
from ninetoothed_ascend.ascendify.base import (
    Pass,
    PipelineError,
    RewriteError,
    Rewritten,
    run_pipeline,
)
from ninetoothed_ascend.ascendify.clamp import LowerClamp
from ninetoothed_ascend.ascendify.dot import UseHf32InDot
from ninetoothed_ascend.ascendify.duplicate_configs import MergeDuplicateConfigs
from ninetoothed_ascend.ascendify.flat_access import ContiguousFlatAccess
from ninetoothed_ascend.ascendify.float64 import LowerFloat64
from ninetoothed_ascend.ascendify.grid import PersistentGrid
from ninetoothed_ascend.ascendify.imports import ImportStandardModules
from ninetoothed_ascend.ascendify.libdevice import RemapLibdevice
from ninetoothed_ascend.ascendify.load_broadcast import BroadcastLoadPointer
from ninetoothed_ascend.ascendify.loads import FillMaskedLoads
from ninetoothed_ascend.ascendify.lower_bounds import ScalarizeTileLowerBounds
from ninetoothed_ascend.ascendify.masks import FoldTrueMask, GroupMaskTerms
from ninetoothed_ascend.ascendify.math_constants import FoldMathConstants
from ninetoothed_ascend.ascendify.padded_lower_bounds import (
    ScalarizePaddedTileLowerBounds,
)
from ninetoothed_ascend.ascendify.read_back import SynchronizeReadBack
from ninetoothed_ascend.ascendify.sub_blocks import SplitSubBlocks
from ninetoothed_ascend.ascendify.ub_configs import FitUnifiedBuffer

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
