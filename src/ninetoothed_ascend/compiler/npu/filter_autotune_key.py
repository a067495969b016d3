"""Key the autotuner on as many sizes as the target's triton-ascend accepts."""

import ast

from ninetoothed_ascend.compiler.facts import LEADING_KEYS
from ninetoothed_ascend.compiler.generated import launch_arguments
from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import walk


class FilterAutotuneKey(Pass):
    """Keep only sizes in ``triton.autotune(..., key=[...])``, at most the target's limit, grid-deciding ones first.

    Constraint: triton-ascend's autotuners bind each key to an axis name and
    raise "Number of parameters exceeds the number of available axes" past
    them: 12 in triton-ascend 3.2's tiling autotuner, 6 after it, where
    ``triton.autotune`` itself is that autotuner
    (:attr:`~ninetoothed_ascend.compiler.target.Target.autotune_key_limit`
    has the sources); NineToothed keys on every size and stride of every
    tensor (32 keys for four 4-D tensors). Every re-tune is also a round of
    NPU compiles (docs/ascend.md, "Autotuning").

    The key's parameters are classified by what the launch function passes
    for them (``launch_<kernel>`` calls ``<autotuned>[grid](...)``): a
    ``tensor.size(i)`` is a size, a ``tensor.stride(i)`` a stride, anything
    else (a tensor: a pointer) neither. The new key holds sizes only, in
    this order, up to the target's limit: those the grid function reads, then
    those the kernel divides by a block size (``// BLOCK``: they decide the
    number of tiles), then the rest, each group in the original order.
    Dropping strides means a layout change with equal sizes reuses the
    tuned config; the config only decides speed, never results.

    The parameters an earlier pass names under
    :data:`~ninetoothed_ascend.compiler.facts.LEADING_KEYS` come
    first, whatever they are: configs chosen per launch size or layout are
    not reused for another. So the key is decided here, once. An autotuner
    whose launch cannot be found keeps its order. Runs after
    :class:`~ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer.FitUnifiedBuffer` and
    before :class:`~ninetoothed_ascend.compiler.npu.defer_autotune.DeferAutotune`, which moves
    the ``triton.autotune`` call into a factory.

    :Constraint: triton-ascend's tiling autotuner binds each key to one of 12
        axes ("Number of parameters exceeds the number of available axes");
        NineToothed keys on every size and stride
    :Source: docs/ascend.md, "Autotuning";
        `tests/compiler/npu/test_filter_autotune_key.py` (four 4-D tensors: 32
        keys)
    :Rewrites: `key=[...]` keeps sizes only (classified by the launch's
        `t.size(i)` / `t.stride(i)` arguments), the launch sizes, innermost
        strides and layout flags `FitUnifiedBuffer` sized its configs by first
        (the fact it leaves), then grid-deciding sizes, then those divided by a
        block size, at most 12
    """

    TRIGGERS = ("triton.autotune",)

    def visit_Module(self, node):
        leading = self.facts.get(LEADING_KEYS, {})

        for autotuner in self.module.autotuners():
            key = autotuner.keyword("key")
            kernel = autotuner.kernel

            if key is None or not isinstance(key.value, ast.List) or kernel is None:
                continue

            old = [
                element.value
                for element in key.value.elts
                if isinstance(element, ast.Constant)
            ]
            ordered = self.sizes_in_order(autotuner, kernel, old)
            front = leading.get(autotuner.name, [])

            if ordered is None and not front:
                continue

            rest = [name for name in ordered or old if name not in front]
            new = (front + rest)[: self.target.autotune_key_limit]

            if new != old:
                key.value = ast.List([ast.Constant(name) for name in new], ast.Load())
                self.rewrote()

        return node

    def sizes_in_order(self, autotuner, kernel, key):
        """The sizes of ``key`` (``list`` of ``str``), grid-deciding ones first, then tiled ones; ``None`` where the launch is not found."""

        launch = self.module.launch(autotuner.name)

        if launch is None:
            return None

        grid, call = launch
        arguments = launch_arguments(kernel, call)
        sizes = [name for name in key if _method(arguments.get(name)) == "size"]
        grid_text = ast.dump(grid)
        divided = _divided_names(kernel, self.constexpr_parameters(kernel))
        in_grid = [name for name in sizes if ast.dump(arguments[name]) in grid_text]
        tiled = [name for name in sizes if name in divided and name not in in_grid]

        return in_grid + tiled + [name for name in sizes if name not in in_grid + tiled]


def _method(node):
    """``"size"`` for ``x.size(i)``, ``"stride"`` for ``x.stride(i)``, else ``None``."""

    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("size", "stride")
    ):
        return node.func.attr

    return None


def _divided_names(kernel, constexprs):
    """Names read in the dividend of a ``//`` whose divisor is one of the ``constexprs`` parameters."""

    names = set()

    for node in walk(kernel):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.FloorDiv)
            and isinstance(node.right, ast.Name)
            and node.right.id in constexprs
        ):
            names.update(
                name.id for name in walk(node.left) if isinstance(name, ast.Name)
            )

    return names
