"""Autotune configs for Ascend, chosen by the Unified Buffer model instead of the GPU's register bound."""

import ast
import copy
import itertools

from ninetoothed_ascend.ascendify.base import (
    Pass,
    RewriteError,
    autotune_assignments,
    autotune_block_sizes,
    keyword,
    resolve,
)
from ninetoothed_ascend.ascendify.ub_model import UnknownSize, footprint, soc

#: At most this many configs per kernel: every config is one more NPU
#: compile at the first launch (../shared/ASCEND.md, "Autotuning on Ascend").
MAX_CONFIGS = 8

#: Block sizes are not doubled past this, whatever the UB allows.
MAX_BLOCK_SIZE = 1 << 16


class FitUnifiedBuffer(Pass):
    """Replace each autotuner's configs by block sizes that fit the Unified Buffer.

    Constraint: a tile set larger than the core's Unified Buffer (192 KB on
    Atlas A2) is a compile error on Ascend ("ub overflow, requires N bits
    while M bits available", triton-ascend migration guide;
    ../shared/ASCEND.md, "Hardware limits"). NineToothed sizes its configs
    for a GPU's registers and shared memory, so some of them overflow the UB
    (matmul's 128x128x64 needs about 256 KB by the model) while others leave
    most of it unused (add's largest, 1024, uses 20 KB).

    Candidates: each block size takes the values it has in NineToothed's
    configs, extended by doubling while a tile with the other block sizes at
    their smallest still fits (up to :data:`MAX_BLOCK_SIZE`), and, only if
    nothing fits, by halving down to 1. Every combination is measured with
    :func:`~ninetoothed_ascend.ascendify.ub_model.footprint` (dtype unknown:
    4 bytes per element, which bounds fp16/bf16/fp32); those within
    :attr:`Soc.ub_bytes` are kept, the :data:`MAX_CONFIGS` largest (the
    fewest programs, hence the least per-task overhead; ties go to the more
    square tile), sorted from small to large. ``num_warps``/``num_stages``,
    which triton-ascend ignores, are kept as NineToothed set them.

    A kernel whose tiles depend on a constexpr that is not autotuned (a
    block size the caller passes) is left alone: the model cannot size it
    before the launch.

    :raises RewriteError: no candidate fits; names the smallest footprint.
    """

    def visit_Module(self, node):
        budget = soc().ub_bytes
        kernels = {
            statement.name: statement
            for statement in node.body
            if isinstance(statement, ast.FunctionDef)
        }

        for statement in autotune_assignments(node):
            kernel = kernels.get(getattr(statement.value.args[0], "id", None))

            if kernel is None:
                continue

            configs = keyword(statement.value.func, "configs").value
            chosen = self.choose(kernel, autotune_block_sizes(statement), budget)

            if chosen is None:
                continue

            template = configs.elts[0]
            configs.elts = [_config(template, sizes) for sizes in chosen]
            self.rewrote()

        return node

    def choose(self, kernel, gpu_configs, budget):
        names = list(gpu_configs[0])
        values = {
            name: sorted({config[name] for config in gpu_configs}) for name in names
        }

        def measure(sizes):
            return footprint(kernel, self.aliases, sizes).peak

        try:
            smallest = {name: values[name][0] for name in names}
            measure(smallest)
        except UnknownSize:
            return None

        for name in names:
            while values[name][-1] < MAX_BLOCK_SIZE:
                larger = smallest | {name: values[name][-1] * 2}

                if measure(larger) > budget:
                    break

                values[name].append(values[name][-1] * 2)

        fitting = _fitting(names, values, measure, budget)

        while not fitting and any(values[name][0] > 1 for name in names):
            for name in names:
                if values[name][0] > 1:
                    values[name].insert(0, values[name][0] // 2)

            fitting = _fitting(names, values, measure, budget)

        if not fitting:
            sizes = {name: values[name][0] for name in names}

            raise RewriteError(
                f"kernel `{kernel.name}` has no block sizes that fit the "
                f"{budget}-byte Unified Buffer: the smallest, {sizes}, needs "
                f"{measure(sizes)} bytes by the UB model (docs/ub.md).",
                "Tile fewer or smaller tensors per program, or set "
                "NINETOOTHED_ASCEND_UB_BYTES if the SoC's UB is larger.",
            )

        fitting.sort(
            key=lambda item: (-item[0], max(item[1].values()) / min(item[1].values()))
        )

        return [
            sizes
            for _, sizes in sorted(
                fitting[:MAX_CONFIGS],
                key=lambda item: (item[0], list(item[1].values())),
            )
        ]


def _fitting(names, values, measure, budget):
    fitting = []

    for combination in itertools.product(*(values[name] for name in names)):
        sizes = dict(zip(names, combination))
        bytes_ = measure(sizes)

        if bytes_ <= budget:
            fitting.append((bytes_, sizes))

    return fitting


def _config(template, sizes):
    config = copy.deepcopy(template)
    config.args[0] = ast.Dict(
        keys=[ast.Constant(name) for name in sizes],
        values=[ast.Constant(value) for value in sizes.values()],
    )

    return config


def kernel_configs(tree):
    """Return ``[(kernel, [block sizes, ...])]`` for every ``triton.autotune`` call in ``tree``.

    Finds the calls wherever they are (at module level, or inside the factory
    :class:`~ninetoothed_ascend.ascendify.autotune.DeferAutotune` makes).

    :param tree: ``ast.Module``.
    :return: ``list`` of ``(ast.FunctionDef, list of dict)``.
    """

    from ninetoothed_ascend.ascendify.base import import_aliases

    aliases = import_aliases(tree)
    kernels = {
        statement.name: statement
        for statement in tree.body
        if isinstance(statement, ast.FunctionDef)
    }
    found = []

    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Call)
            and resolve(node.func.func, aliases) == "triton.autotune"
            and node.args
            and getattr(node.args[0], "id", None) in kernels
        ):
            configs = keyword(node.func, "configs").value.elts
            found.append(
                (
                    kernels[node.args[0].id],
                    [ast.literal_eval(config.args[0]) for config in configs],
                )
            )

    return found
