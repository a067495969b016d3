"""Create the autotuner at first launch instead of at import."""

import ast

from ninetoothed_ascend.compiler.facts import DEFERRED_AUTOTUNERS
from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import Transformer


class DeferAutotune(Pass):
    """Rewrite ``name = triton.autotune(...)(kernel)`` into a cached factory called at launch.

    Constraint: in Triton 3.2, the frontend of triton-ascend 3.2.0,
    ``triton.autotune(...)`` asks the active driver for a benchmarker when the
    decorator runs, so a module that autotunes at import cannot even be
    imported on a machine without an NPU (measured, docs/ascend.md, "Without a driver"). The NPU variant must import everywhere: to be
    cached, inspected and compile-checked.

    The module-level assignment becomes::

        @functools.cache
        def name():
            return triton.autotune(...)(kernel)

    and every use of ``name`` becomes ``name()``. The autotuner is created once,
    at the first launch, with the same configs and key. The factories it
    made are the fact :data:`~ninetoothed_ascend.compiler.facts.DEFERRED_AUTOTUNERS`.

    :Constraint: Triton 3.2's `triton.autotune` asks the driver for a
        benchmarker at import ("0 active drivers" without an NPU)
    :Source: measured;
        `test_cuda_variant_cannot_even_be_imported_without_an_npu_driver`
    :Rewrites: `name = triton.autotune(...)(kernel)` becomes a
        `functools.cache` factory called at launch
    """

    TRIGGERS = ("triton.autotune",)

    def visit_Module(self, node):
        deferred = set()

        for autotuner in self.module.autotuners():
            statement, target = autotuner.statement, autotuner.name
            node.body[node.body.index(statement)] = ast.copy_location(
                _cached_factory(target, statement.value), statement
            )
            deferred.add(target)
            self.facts.setdefault(DEFERRED_AUTOTUNERS, {})[target] = (
                autotuner.kernel.name if autotuner.kernel is not None else None
            )
            self.rewrote()

        if deferred:
            _CallInsteadOfName(deferred).visit(node)
            node.body.insert(0, ast.Import(names=[ast.alias("functools")]))

        return node


def _cached_factory(name, value):
    factory = ast.parse(f"@functools.cache\ndef {name}():\n    return None").body[0]
    factory.body[0].value = value

    return factory


class _CallInsteadOfName(Transformer):
    def __init__(self, names):
        self._names = names

    def visit_FunctionDef(self, node):
        if node.name in self._names:
            return node

        self.generic_visit(node)

        return node

    def visit_Name(self, node):
        if node.id in self._names and isinstance(node.ctx, ast.Load):
            return ast.Call(func=node, args=[], keywords=[])

        return node
