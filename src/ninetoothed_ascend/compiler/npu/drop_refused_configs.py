"""Drop, and remember, a config BiShengIR refuses for the Unified Buffer at the launch, instead of failing the launch."""

import ast
import hashlib

from ninetoothed_ascend.compiler.facts import DEFERRED_AUTOTUNERS
from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import insert_after_imports

#: The name the NPU variant binds the runtime's wrapper to.
WRAPPER = "ninetoothed_ascend_drop_refused_configs"


class DropRefusedConfigs(Pass):
    """Make each autotuner ``DeferAutotune`` defers the plugin's runtime autotuner, which drops a config BiShengIR refuses for the UB.

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

    Each factory ``DeferAutotune`` made (the fact
    :data:`~ninetoothed_ascend.compiler.facts.DEFERRED_AUTOTUNERS`) gets a
    decorator under its ``functools.cache``::

        @functools.cache
        @ninetoothed_ascend_drop_refused_configs('kernel', '<sha256 of the variant>', '<SoC>')
        def name():
            return triton.autotune(...)(kernel)

    (:func:`ninetoothed_ascend.runtime.refused_configs.drop_refused_configs`),
    which hands what the factory returns to
    :func:`~ninetoothed_ascend.runtime.refused_configs.with_refusals`: on
    triton-ascend, a refused config is dropped with a one-line warning and
    remembered in the cache, no config compiling raises
    ``UnifiedBufferOverflowError`` with the bytes, any other compile failure
    is raised as it was; elsewhere (the emulations, whose
    ``FixAutotuneConfig`` replaces the factory's autotuner by the kernel) what
    the factory returns is returned as it is. The digest is that of the
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
    :Rewrites: each factory `DeferAutotune` made is decorated with
        `runtime.drop_refused_configs(kernel, variant digest, SoC)`
    """

    TRIGGERS = ("triton.autotune",)

    def visit_Module(self, node):
        factories = self.facts.get(DEFERRED_AUTOTUNERS, {})

        if not factories:
            return node

        functions = self.module.functions()
        variant = hashlib.sha256(ast.unparse(node).encode()).hexdigest()

        for name, kernel in factories.items():
            factory = functions.get(name)

            if factory is None:
                continue

            decorator = ast.parse(
                f"{WRAPPER}({kernel or name!r}, {variant!r}, {self.target.soc.name!r})",
                mode="eval",
            ).body
            # Under ``functools.cache``: the autotuner is wrapped once.
            factory.decorator_list.append(decorator)
            self.rewrote()

        if self.rewrites:
            insert_after_imports(
                node,
                ast.parse(
                    "from ninetoothed_ascend.runtime import drop_refused_configs "
                    f"as {WRAPPER}"
                ).body,
            )

        return node
