"""Rewrite NineToothed's generated Triton for triton-ascend.

The NPU variant of a kernel is NineToothed's CUDA source run through
:data:`PIPELINE`, in order. Each pass is one Ascend constraint; its docstring
states the constraint and where it is documented or measured.
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
from ninetoothed_ascend.ascendify.sub_blocks import SplitSubBlocks
from ninetoothed_ascend.ascendify.ub_configs import FitUnifiedBuffer

#: The NPU pipeline.
PIPELINE = (
    ImportStandardModules,
    FoldMathConstants,
    FoldTrueMask,
    ScalarizeTileLowerBounds,
    ScalarizePaddedTileLowerBounds,
    GroupMaskTerms,
    FillMaskedLoads,
    LowerClamp,
    UseHf32InDot,
    RemapLibdevice,
    LowerFloat64,
    FilterAutotuneKey,
    ContiguousFlatAccess,
    FitUnifiedBuffer,
    SplitSubBlocks,
    PersistentGrid,
    BroadcastLoadPointer,
    DeferAutotune,
)


def precision_notes(rewrites):
    """Say what a variant loses in precision, from the passes that fired.

    :param rewrites: ``((pass name, number of rewrites), ...)``, as
        :attr:`Rewritten.rewrites` and ``Handle.rewrites(name)``.
    :return: ``tuple`` of ``(pass name, str)``, one per pass of
        :data:`PIPELINE` that fired and declares a ``PRECISION`` loss.
    """

    passes = {pass_class.__name__: pass_class for pass_class in PIPELINE}

    return tuple(
        (name, passes[name].PRECISION)
        for name, count in rewrites
        if count and name in passes and passes[name].PRECISION
    )


def ascendify(source):
    """Rewrite a generated Triton module for triton-ascend.

    :param source: ``str``, a module as NineToothed generates it.
    :return: :class:`Rewritten`: the NPU source and the passes that fired.
    :raises PipelineError: naming the pass that cannot handle the kernel.
    """

    return run_pipeline(source, PIPELINE)


__all__ = [
    "PIPELINE",
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
    "Pass",
    "PersistentGrid",
    "PipelineError",
    "RemapLibdevice",
    "RewriteError",
    "Rewritten",
    "ScalarizePaddedTileLowerBounds",
    "ScalarizeTileLowerBounds",
    "SplitSubBlocks",
    "UseHf32InDot",
    "ascendify",
    "precision_notes",
    "run_pipeline",
]
