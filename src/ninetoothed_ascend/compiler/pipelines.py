"""Every pipeline of passes, declared once.

NineToothed's source is the CUDA variant; each other variant is that source
run through its pipeline (:data:`VARIANTS`), and each emulation is the NPU
variant's source run through one more (:data:`EMULATIONS`). Every pass is
one constraint of what runs the output; its docstring states it and where
it is documented or measured (docs/passes.md lists them all).
"""

from ninetoothed_ascend.compiler.cpu.bind_language_module import BindLanguageModule
from ninetoothed_ascend.compiler.cpu.fix_autotune_config import FixAutotuneConfig
from ninetoothed_ascend.compiler.cpu.index_loop_bounds import IndexLoopBounds
from ninetoothed_ascend.compiler.cpu.interpret_kernels import InterpretKernels
from ninetoothed_ascend.compiler.cpu.interpret_language_functions import (
    InterpretLanguageFunctions,
)
from ninetoothed_ascend.compiler.cpu.interpret_libdevice import InterpretLibdevice
from ninetoothed_ascend.compiler.cpu.widen_bfloat16 import WidenBfloat16
from ninetoothed_ascend.compiler.emulation.boolean_mask_data import BooleanMaskData
from ninetoothed_ascend.compiler.emulation.drop_ascend_launch_options import (
    DropAscendLaunchOptions,
)
from ninetoothed_ascend.compiler.emulation.drop_software_pipelining import (
    DropSoftwarePipelining,
)
from ninetoothed_ascend.compiler.emulation.emulate_hf32_on_cpu import EmulateHf32OnCpu
from ninetoothed_ascend.compiler.emulation.emulate_hf32_on_cuda import EmulateHf32OnCuda
from ninetoothed_ascend.compiler.emulation.emulate_libdevice_on_cpu import (
    EmulateLibdeviceOnCpu,
)
from ninetoothed_ascend.compiler.emulation.emulate_libdevice_on_cuda import (
    EmulateLibdeviceOnCuda,
)
from ninetoothed_ascend.compiler.emulation.reject_ascend_only import RejectAscendOnly
from ninetoothed_ascend.compiler.npu.access_float64_as_bits import AccessFloat64AsBits
from ninetoothed_ascend.compiler.npu.broadcast_load_pointer import BroadcastLoadPointer
from ninetoothed_ascend.compiler.npu.compensate_float64_cancellation import (
    CompensateFloat64Cancellation,
)
from ninetoothed_ascend.compiler.npu.confine_masked_lanes import ConfineMaskedLanes
from ninetoothed_ascend.compiler.npu.contiguous_flat_access import ContiguousFlatAccess
from ninetoothed_ascend.compiler.npu.defer_autotune import DeferAutotune
from ninetoothed_ascend.compiler.npu.drop_refused_configs import DropRefusedConfigs
from ninetoothed_ascend.compiler.npu.fill_masked_loads import FillMaskedLoads
from ninetoothed_ascend.compiler.npu.filter_autotune_key import FilterAutotuneKey
from ninetoothed_ascend.compiler.npu.fold_math_constants import FoldMathConstants
from ninetoothed_ascend.compiler.npu.fold_true_mask import FoldTrueMask
from ninetoothed_ascend.compiler.npu.group_mask_terms import GroupMaskTerms
from ninetoothed_ascend.compiler.npu.import_standard_modules import (
    ImportStandardModules,
)
from ninetoothed_ascend.compiler.npu.inline_lane_ranges import InlineLaneRanges
from ninetoothed_ascend.compiler.npu.keep_loop_carried_dtype import (
    KeepLoopCarriedDtype,
)
from ninetoothed_ascend.compiler.npu.lower_clamp import LowerClamp
from ninetoothed_ascend.compiler.npu.lower_float64 import LowerFloat64
from ninetoothed_ascend.compiler.npu.lower_integer_power import LowerIntegerPower
from ninetoothed_ascend.compiler.npu.merge_duplicate_configs import (
    MergeDuplicateConfigs,
)
from ninetoothed_ascend.compiler.npu.persistent_grid import PersistentGrid
from ninetoothed_ascend.compiler.npu.remap_libdevice import RemapLibdevice
from ninetoothed_ascend.compiler.npu.scalarize_padded_tile_lower_bounds import (
    ScalarizePaddedTileLowerBounds,
)
from ninetoothed_ascend.compiler.npu.scalarize_tile_lower_bounds import (
    ScalarizeTileLowerBounds,
)
from ninetoothed_ascend.compiler.npu.solve_sync_by_injection import (
    SolveSyncByInjection,
)
from ninetoothed_ascend.compiler.npu.sort_with_bitonic_network import (
    SortWithBitonicNetwork,
)
from ninetoothed_ascend.compiler.npu.synchronize_read_back import SynchronizeReadBack
from ninetoothed_ascend.compiler.npu.transpose_strided_tiles import (
    TransposeStridedTiles,
)
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import FitUnifiedBuffer
from ninetoothed_ascend.compiler.npu.ub.split_sub_blocks import SplitSubBlocks
from ninetoothed_ascend.compiler.npu.unscale_strided_lane_bounds import (
    UnscaleStridedLaneBounds,
)
from ninetoothed_ascend.compiler.npu.unsubtract_lane_bounds import (
    UnsubtractLaneBounds,
)
from ninetoothed_ascend.compiler.npu.use_hf32_in_dot import UseHf32InDot
from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.target import Target

#: The NPU variant, for triton-ascend.
NPU = (
    ImportStandardModules,
    FoldMathConstants,
    InlineLaneRanges,
    FoldTrueMask,
    ScalarizeTileLowerBounds,
    ScalarizePaddedTileLowerBounds,
    UnsubtractLaneBounds,
    UnscaleStridedLaneBounds,
    GroupMaskTerms,
    FillMaskedLoads,
    LowerClamp,
    LowerIntegerPower,
    KeepLoopCarriedDtype,
    SortWithBitonicNetwork,
    SolveSyncByInjection,
    UseHf32InDot,
    RemapLibdevice,
    LowerFloat64,
    ContiguousFlatAccess,
    TransposeStridedTiles,
    ConfineMaskedLanes,
    FitUnifiedBuffer,
    FilterAutotuneKey,
    SplitSubBlocks,
    SynchronizeReadBack,
    PersistentGrid,
    BroadcastLoadPointer,
    AccessFloat64AsBits,
    CompensateFloat64Cancellation,
    MergeDuplicateConfigs,
    DeferAutotune,
    DropRefusedConfigs,
)

#: The CPU variant, for Triton's interpreter.
CPU = (
    ImportStandardModules,
    InterpretLibdevice,
    WidenBfloat16,
    IndexLoopBounds,
    BindLanguageModule,
    FixAutotuneConfig,
    InterpretKernels,
    InterpretLanguageFunctions,
)

#: The variants built from NineToothed's source: name -> passes, in order.
VARIANTS = {"npu": NPU, "cpu": CPU}

#: What runs each variant of :data:`VARIANTS` (for errors).
RUNS_ON = {"npu": "triton-ascend", "cpu": "Triton's interpreter"}

#: The NPU variant's emulations, built from its source: device type ->
#: passes, in order. The CPU one ends with the CPU variant's pipeline.
EMULATIONS = {
    "cuda": (
        EmulateLibdeviceOnCuda,
        EmulateHf32OnCuda,
        DropAscendLaunchOptions,
        DropSoftwarePipelining,
        RejectAscendOnly,
    ),
    "cpu": (
        EmulateLibdeviceOnCpu,
        EmulateHf32OnCpu,
        DropAscendLaunchOptions,
        RejectAscendOnly,
        BooleanMaskData,
        *CPU,
    ),
}

#: Every pass of every pipeline, by class name.
PASSES = {
    pass_class.__name__: pass_class
    for pipeline in (*VARIANTS.values(), *EMULATIONS.values())
    for pass_class in pipeline
}


def emulate(npu_source, device_type):
    """Derive the emulated NPU variant for ``device_type`` from the NPU variant's text.

    The emulation passes receive the NPU variant's target here
    (``Target.from_environment("npu")``): the emulation stands for it.

    :param npu_source: ``str``, the NPU variant, as
        :meth:`ninetoothed_ascend.Handle.source` returns it.
    :param device_type: ``"cuda"`` or ``"cpu"``, a key of :data:`EMULATIONS`.
    :return: :class:`~ninetoothed_ascend.compiler.passes.Rewritten`: the emulated
        source and the emulation passes that fired.
    :raises PipelineError: naming the pass that cannot emulate the kernel.
    :raises KeyError: ``device_type`` is not a key of :data:`EMULATIONS`.
    """

    if device_type not in EMULATIONS:
        raise KeyError(
            f"{device_type!r} cannot emulate the NPU variant; choose one of "
            f"{', '.join(EMULATIONS)}"
        )

    return run_pipeline(
        npu_source, EMULATIONS[device_type], Target.from_environment("npu")
    )


def precision_notes(rewrites):
    """Say what a variant loses in precision, from the passes that fired.

    :param rewrites: ``((pass name, number of rewrites), ...)``, as
        :attr:`~ninetoothed_ascend.compiler.passes.Rewritten.rewrites` and
        ``Handle.rewrites(name)``.
    :return: ``tuple`` of ``(pass name, str)``, one per pass of :data:`NPU`
        that fired and declares a ``PRECISION`` loss.
    """

    passes = {pass_class.__name__: pass_class for pass_class in NPU}

    return tuple(
        (name, passes[name].PRECISION)
        for name, count in rewrites
        if count and name in passes and passes[name].PRECISION
    )
