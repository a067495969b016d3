"""The CPU pass :class:`FixAutotuneConfig`."""

import ast
import math

from ninetoothed_ascend.compiler.generated import block_sizes
from ninetoothed_ascend.compiler.passes import (
    Pass,
)


class FixAutotuneConfig(Pass):
    """Replace the autotuner with one config, chosen without a benchmarker.

    Triton's autotuner times each config on the device, which the interpreter
    cannot do meaningfully. The interpreter runs programs one after another,
    each as NumPy operations over a whole tile, so the config with the most
    elements per program (the largest product of block sizes; the first one on
    ties) runs fastest. ``name = triton.autotune(configs, key)(kernel)``
    becomes ``name = kernel`` and each launch ``name[grid](...)`` passes the
    chosen block sizes as keywords. An autotuner made by a module-level
    factory (``def name(): return triton.autotune(...)(kernel)``, the NPU
    variant's :class:`~ninetoothed_ascend.compiler.npu.defer_autotune.DeferAutotune`, which
    the CPU emulation runs) is replaced where it is made, and each launch
    ``name()[grid](...)`` likewise.

    :Constraint: the autotuner needs a device benchmarker; the interpreter runs
        the config with the largest tile
    :Source: triton/runtime/autotuner.py (3.9): `Autotuner.run` benchmarks
        every config with the driver's `do_bench`
    """

    TRIGGERS = ("triton.autotune",)

    def visit_Module(self, node):
        self._chosen = {}
        self._factories = set()

        for statement in node.body:
            holder, name = self._autotuner(statement)

            if holder is None:
                continue

            if holder is not statement:
                self._factories.add(name)

            self._chosen[name] = max(
                block_sizes(holder.value.func),
                key=lambda sizes: math.prod(sizes.values()),
            )
            holder.value = holder.value.args[0]
            self.rewrote()

        # Launches are host code: the kernels, most of the module, are not
        # walked (while this pass runs before InterpretKernels, which leaves
        # no ``triton.jit`` kernel to tell apart).
        for statement in self.module.host_statements():
            self.visit(statement)

        return node

    def _autotuner(self, statement):
        """``(node whose value is the autotuner, name launched)`` for a module-level statement that makes one, else ``(None, None)``."""

        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            holder, name = statement, statement.targets[0].id
        elif (
            isinstance(statement, ast.FunctionDef)
            and not statement.args.args
            and len(statement.body) == 1
            and isinstance(statement.body[0], ast.Return)
        ):
            holder, name = statement.body[0], statement.name
        else:
            return None, None

        if not self.module.is_autotuned(holder.value):
            return None, None

        return holder, name

    def visit_Call(self, node):
        self.generic_visit(node)

        launched = node.func.value if isinstance(node.func, ast.Subscript) else None

        if (
            isinstance(launched, ast.Call)
            and isinstance(launched.func, ast.Name)
            and launched.func.id in self._factories
            and not launched.args
        ):
            launched = launched.func

        if isinstance(launched, ast.Name) and launched.id in self._chosen:
            node.keywords.extend(
                ast.keyword(name, ast.Constant(value))
                for name, value in self._chosen[launched.id].items()
            )

        return node
