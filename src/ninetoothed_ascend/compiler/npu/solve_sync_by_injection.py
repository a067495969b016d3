"""The NPU pass :class:`SolveSyncByInjection`."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import keyword, walk

#: triton-ascend's launch option (a field of ``NPUOptions``) that chooses
#: how BiShengIR inserts the synchronization between an AI core's pipes:
#: ``False`` passes ``--enable-hivm-graph-sync-solver=False``.
SYNC_SOLVER = "sync_solver"

#: What a sorting network is made of: Triton's bitonic sort, which
#: ``SortWithBitonicNetwork`` calls for the dtypes ``vsort`` refuses.
_NETWORK = "triton.language.standard.sort"


class SolveSyncByInjection(Pass):
    """Launch the kernels that hold a sorting network with ``sync_solver=False``, so that BiShengIR synchronizes them by injection.

    Constraint: BiShengIR inserts the synchronization between an AI core's
    pipes (``set_flag``/``wait_flag``) with its graph sync solver by default
    (ascendnpu-ir 1.2.0, the pass ``GraphSyncSolver``), whose time grows far
    faster than the kernel: on Triton's bitonic network, a 64-lane row
    sort is about 3,400 lines of HIVM, and the solver alone takes 26 of the
    43 s of ``bishengir-compile`` for ``int32`` (timed per pass with
    ``--mlir-print-ir-before-all``). Measured on this project's row sort
    (``tests/compiler/npu/test_sort_with_bitonic_network.py``, 5 x 64,
    Ascend910B1, 2-core host): ``int32`` 31.3 s and ``int64`` 115.8 s
    through ``bishengir-compile`` as triton-ascend 3.2.0 calls it; 2.7 s
    and 5.8 s with ``--enable-hivm-graph-sync-solver=false``, the older
    sync injection, both reaching ``hivmc``. triton-ascend 3.2.0 passes that
    flag from the ``sync_solver`` option (``NPUOptions``;
    ``linalg_to_bin_enable_npu_compile_A2_A3`` in
    ``backends/ascend/compiler.py``), which a launch takes as a keyword
    ("NPU compiler options passed through triton.Config or kernel launch
    meta-parameters", triton-ascend's
    ``docs/en/environment_variable_and_compiler_options_reference.md``).

    Every launch (``kernel[grid](...)``, directly or through its autotuner)
    of a kernel that calls ``triton.language.standard.sort``, in its body
    or through a ``triton.jit`` function of the module (the helper
    ``SortWithBitonicNetwork`` adds), gets ``sync_solver=False``. The
    helper's dtype is chosen at compile time, so a launch that sorts a
    dtype ``vsort`` takes is synchronized by injection too. A launch that
    already states ``sync_solver`` keeps it. The emulations drop the keyword
    (``DropAscendLaunchOptions``); ``check`` compiles with it, as a
    launch does.

    :Constraint: BiShengIR's default graph sync solver takes most of a
        sorting network's compile: 31 s (`int32`) and 116 s (`int64`) for a
        64-lane row through `bishengir-compile`, 2.7 s and 5.8 s with
        `--enable-hivm-graph-sync-solver=false`, which triton-ascend 3.2.0
        passes from the launch option `sync_solver`
    :Source: triton-ascend 3.2.0 `backends/ascend/compiler.py`
        (`NPUOptions.sync_solver`, `linalg_to_bin_enable_npu_compile_A2_A3`),
        its `docs/en/environment_variable_and_compiler_options_reference.md`;
        measured with ascendnpu-ir 1.2.0 on the row sort of
        `tests/compiler/npu/test_sort_with_bitonic_network.py`;
        `tests/compiler/npu/test_solve_sync_by_injection.py`
    :Rewrites: each launch of a kernel that calls
        `triton.language.standard.sort` (itself or through a `triton.jit`
        helper) gets `sync_solver=False`
    """

    TRIGGERS = (_NETWORK,)

    def finish(self, tree):
        kernels = self.module.kernels()
        holding = {
            name
            for name, function in kernels.items()
            if any(self.is_call_to(node, _NETWORK) for node in walk(function))
        }
        calling = {
            name
            for name, function in kernels.items()
            if any(
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in holding
                for node in walk(function)
            )
        }

        for kernel, call in self.module.launches():
            if kernel.name in holding | calling and keyword(call, SYNC_SOLVER) is None:
                call.keywords.append(ast.keyword(SYNC_SOLVER, ast.Constant(False)))
                self.rewrote()
