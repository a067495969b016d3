"""The emulation pass :class:`DropAscendLaunchOptions`."""

from ninetoothed_ascend.compiler.npu.solve_sync_by_injection import SYNC_SOLVER
from ninetoothed_ascend.compiler.passes import Pass

#: Launch keywords the NPU pipeline writes that are compile options of
#: triton-ascend alone (fields of its ``NPUOptions``), with no meaning for
#: what the kernel computes.
ASCEND_LAUNCH_OPTIONS = frozenset({SYNC_SOLVER})


class DropAscendLaunchOptions(Pass):
    """Drop the launch keywords that only triton-ascend's compiler takes.

    Constraint: CUDA Triton's JIT refuses a launch keyword that is neither a
    parameter of the kernel nor one of its options ("Keyword argument
    sync_solver was specified but unrecognised", ``JITFunction.run`` of
    Triton 3.x), and Triton's interpreter binds every keyword to a kernel
    parameter. The NPU pipeline's launch options
    (:data:`ASCEND_LAUNCH_OPTIONS`: ``sync_solver`` from
    ``SolveSyncByInjection``) choose how BiShengIR compiles, not what the
    kernel computes, so the emulation launches without them.

    :Constraint: CUDA Triton and its interpreter refuse launch keywords that
        only triton-ascend's `NPUOptions` defines; they change how BiShengIR
        compiles, not what the kernel computes
    :Source: Triton's `runtime/jit.py` (`JITFunction.run`) and
        `runtime/interpreter.py`; `tests/compiler/emulation/test_drop_ascend_launch_options.py`
    :Rewrites: removes `sync_solver=...` from each kernel launch
    """

    def finish(self, tree):
        for _, call in self.module.launches():
            kept = [
                item for item in call.keywords if item.arg not in ASCEND_LAUNCH_OPTIONS
            ]

            if len(kept) != len(call.keywords):
                self.rewrote(len(call.keywords) - len(kept))
                call.keywords[:] = kept
