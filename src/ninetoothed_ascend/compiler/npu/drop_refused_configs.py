"""Drop, and remember, a config BiShengIR refuses for the Unified Buffer at the launch, instead of failing the launch."""

import ast
import hashlib

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import insert_after_imports

#: The name the NPU variant binds the runtime's wrapper to.
WRAPPER = "ninetoothed_ascend_drop_refused_configs"


class DropRefusedConfigs(Pass):
    """Wrap each ``triton.autotune(...)(kernel)`` in the plugin's runtime autotuner, which drops a config BiShengIR refuses for the UB.

    Constraint: the UB model (``FitUnifiedBuffer``, docs/ub.md) can miss:
    BiShengIR plans the Unified Buffer itself, and a config it finds too
    large fails its compile with ``ub overflow, requires N bits while M bits
    available`` (on stderr; measured with ascendnpu-ir 1.2.0 on
    ``examples/elementwise/add.py``, fp32, ``BLOCK_SIZE`` 8192, strides not
    specialized: 4,194,304 bits required, 1,572,864 available).
    triton-ascend 3.2.0 runs ``bishengir-compile`` with
    ``subprocess.run(..., check=True)`` (``triton/backends/ascend/compiler.py``,
    ``linalg_to_bin_enable_npu_compile_A2_A3``) and its ``compile`` raises
    ``MLIRCompilationError`` with that stderr (``triton/compiler/compiler.py``);
    its ``Autotuner`` (``triton/runtime/autotuner.py``, ``_bench`` and ``run``)
    times the config ``inf`` without a word, launches a refused config where
    every config is refused, and with one config fails the launch with the
    compiler's traceback. Nothing is remembered: each process compiles the
    refused configs again.

    The autotuner expression becomes::

        ninetoothed_ascend_drop_refused_configs(
            triton.autotune(...)(kernel), 'kernel', '<sha256 of the variant>', '<SoC>'
        )

    (:func:`ninetoothed_ascend.runtime.refused_configs.drop_refused_configs`):
    on triton-ascend, a refused config is dropped with a one-line warning and
    remembered in the cache, every config refused raises
    ``UnifiedBufferOverflowError`` with the bytes, any other compile failure
    is raised as it was; elsewhere (the emulations) the autotuner is
    returned as ``triton.autotune`` made it. The digest is that of the
    variant's source before this pass: a later NineToothed output or pass
    changes it, and with it every remembered refusal's stamp. The configs
    themselves are not changed: the runtime only drops those BiShengIR
    refuses, never adds one.

    :Constraint: a config BiShengIR refuses for the UB fails triton-ascend's
        launch where it is the only one or all are refused, silently costs a
        compile otherwise, and is compiled again by every process
    :Source: triton-ascend 3.2.0 `runtime/autotuner.py` (`_bench`, `run`),
        `backends/ascend/compiler.py` (`check=True`), `compiler/compiler.py`;
        measured with ascendnpu-ir 1.2.0,
        `tests/runtime/test_refused_configs.py`
    :Rewrites: `triton.autotune(...)(kernel)` is wrapped in
        `runtime.drop_refused_configs(..., kernel, variant digest, SoC)`
    """

    TRIGGERS = ("triton.autotune",)

    def visit_Module(self, node):
        variant = hashlib.sha256(ast.unparse(node).encode()).hexdigest()
        wrapped = _Wrap(self, variant)
        wrapped.visit(node)

        if wrapped.count:
            insert_after_imports(
                node,
                ast.parse(
                    "from ninetoothed_ascend.runtime import drop_refused_configs "
                    f"as {WRAPPER}"
                ).body,
            )
            self.rewrote(wrapped.count)

        return node


class _Wrap(ast.NodeTransformer):
    def __init__(self, rewrite, variant):
        self._pass = rewrite
        self._variant = variant
        self.count = 0

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self._pass.module.is_autotuned(node):
            return node

        argument = node.args[0] if node.args else None
        kernel = argument.id if isinstance(argument, ast.Name) else "<kernel>"
        self.count += 1

        return ast.Call(
            ast.Name(WRAPPER, ast.Load()),
            [
                node,
                ast.Constant(kernel),
                ast.Constant(self._variant),
                ast.Constant(self._pass.target.soc.name),
            ],
            [],
        )
