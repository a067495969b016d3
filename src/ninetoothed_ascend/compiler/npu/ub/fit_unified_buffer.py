"""Autotune configs for Ascend, chosen by the Unified Buffer model instead of the GPU's register bound."""

import ast
import itertools
import math

from ninetoothed_ascend.compiler.facts import LEADING_KEYS, layout_facts
from ninetoothed_ascend.compiler.generated import (
    GeneratedModule,
    block_sizes,
    launch_arguments,
)
from ninetoothed_ascend.compiler.npu.ub.model import KernelModel, UnknownSize
from ninetoothed_ascend.compiler.passes import Pass, RewriteError
from ninetoothed_ascend.compiler.syntax import clone, insert_after_imports, keyword

#: At most this many configs per kernel: every config is one more NPU
#: compile at the first launch (docs/ascend.md, "Autotuning").
MAX_CONFIGS = 8

#: Block sizes are not doubled past this, whatever the UB allows.
MAX_BLOCK_SIZE = 1 << 16

#: Launch sizes smaller than this share its configs (the footprint only grows with them).
MIN_LAUNCH_BOUND = 16

#: NineToothed's default range of ``ninetoothed.block_size()``, 32 to 1024
#: (NineToothed 0.26, ``Symbol.__init__``: ``DEFAULT_LOWER_BOUND_FOR_META_SYMBOLS
#: = 2**5``, ``DEFAULT_UPPER_BOUND_FOR_META_SYMBOLS = 2**10``), sized for a
#: GPU's registers. A block size whose NineToothed configs span all of it is
#: re-sized past it for the UB; any other keeps its smallest and largest
#: config value as bounds (those the user stated, or narrower).
DEFAULT_BLOCK_SIZE_RANGE = (2**5, 2**10)

#: The fact under which the pipeline's caller passes the ``max_num_configs``
#: the user gave ``make``/``jit`` (``int``; absent or ``None`` when not
#: given): the autotuner tries at most that many configs at a launch.
MAX_NUM_CONFIGS = "max_num_configs"


class FitUnifiedBuffer(Pass):
    """Replace each autotuner's configs by block sizes that fit the Unified Buffer.

    Constraint: a tile set larger than the core's Unified Buffer (192 KB on
    Atlas A2) is a compile error on Ascend ("ub overflow, requires N bits
    while M bits available", triton-ascend migration guide;
    docs/ascend.md, "Unified Buffer"). NineToothed sizes its configs
    for a GPU's registers and shared memory, so some of them overflow the UB
    (matmul's 128x128x64 needs about 256 KB by the model) while others leave
    most of it unused (add's largest, 1024, uses 20 KB).

    Candidates: each block size takes the values it has in NineToothed's
    configs. The user's bounds are part of the kernel's meaning: a block
    size made with ``ninetoothed.block_size(lower_bound, upper_bound)``
    keeps its values within them. Only a block size whose configs span
    NineToothed's whole default range (:data:`DEFAULT_BLOCK_SIZE_RANGE`,
    ``block_size()`` without bounds) is extended, by doubling while a tile
    with the other block sizes at their smallest still fits (up to
    :data:`MAX_BLOCK_SIZE`), and, only if nothing fits, by halving down
    to 1; where the user's ``max_num_configs`` left NineToothed a sample of
    its configs, which shows a block size's lower bound but not its upper
    one, a block size at the default lower bound is halved too (ntops makes
    its pooling kernels so: ``max_num_configs=3`` leaves 32 to 128 of
    ``block_size()``'s range). Every combination is measured with
    :func:`~ninetoothed_ascend.compiler.npu.ub.model.footprint` (dtype unknown:
    4 bytes per element, which bounds fp16/bf16/fp32); those within
    :attr:`Soc.ub_bytes` are kept, the :data:`MAX_CONFIGS` largest (fewer
    where the user's ``max_num_configs``, the fact :data:`MAX_NUM_CONFIGS`,
    is smaller; the fewest programs, hence the least per-task overhead;
    ties go to the more square tile), sorted from small to large.
    ``num_warps``/``num_stages``, which triton-ascend ignores, are those of
    NineToothed's first config (one of the user's choices).

    A kernel whose tiles also depend on a size known only at the launch (a
    shape constexpr, e.g. attention's head dimension ``D``) is sized for
    every power of two ``D`` from :data:`MIN_LAUNCH_BOUND` up to the
    largest with a fitting config: NineToothed's configs that fit, else
    their halvings (config pruning; such a kernel is not split). Where
    nothing fits at :data:`MIN_LAUNCH_BOUND`, every power of two from 1 is
    sized instead: a pooling window's sides are such sizes (ntops'
    ``max_pool2d`` states kernel sizes up to 16, and its ``16 x 16`` windows
    of 32 outputs need 425,984 B by the model). The
    autotuner gets the union and an ``early_config_prune`` that keeps, at
    each launch, the configs chosen for ``next_power_of_2(D)`` (the
    footprint grows with ``D``); ``D`` leads the autotune key (with the
    innermost strides and layout flags the configs depend on, handed to
    :class:`~ninetoothed_ascend.compiler.npu.filter_autotune_key.FilterAutotuneKey`
    as the fact :data:`~ninetoothed_ascend.compiler.facts.LEADING_KEYS`); the launch
    refuses a ``D`` above the largest, before anything is compiled. A
    kernel whose tiles depend on a constexpr the caller passes as a block
    size is left to :class:`~ninetoothed_ascend.compiler.npu.ub.split_sub_blocks.SplitSubBlocks`.

    :raises RewriteError: no candidate fits; names the smallest footprint
        and the bounds that keep smaller blocks out.

    :Constraint: a program's tiles must fit the UB (192 KB on A2; "ub overflow"
        otherwise); NineToothed's configs are sized for a GPU's registers
    :Source: triton-ascend migration guide; docs/ascend.md, "Unified Buffer"
    :Rewrites: autotune configs are chosen by the UB model (docs/ub.md), within
        the block-size bounds the kernel states and its `max_num_configs`; for
        tiles sized at the launch (a head dimension), per power of two of that
        size, pruned at the launch
    """

    TRIGGERS = ("triton.autotune",)

    def visit_Module(self, node):
        budget = self.target.soc.ub_bytes
        self.models = {}

        for autotuner in self.module.autotuners():
            kernel, statement = autotuner.kernel, autotuner.statement

            if kernel is None:
                continue

            configs = autotuner.keyword("configs").value
            gpu_configs = autotuner.block_sizes()
            launch_sized = self.launch_sized(kernel, gpu_configs[0])

            if launch_sized is None:
                continue

            strides, flags = self.layout(kernel, gpu_configs[0], launch_sized)

            if launch_sized or strides or flags:
                chosen = self.choose_per_launch(
                    node,
                    statement,
                    kernel,
                    gpu_configs,
                    budget,
                    launch_sized,
                    strides,
                    flags,
                )
            else:
                chosen = self.choose(kernel, gpu_configs, budget)

            template = configs.elts[0]
            configs.elts = [_config(template, sizes) for sizes in chosen]
            self.rewrote()

        return node

    def footprint(self, kernel, constexprs, contiguous):
        """The UB model's footprint of ``kernel`` (one :class:`KernelModel` per kernel, kept for the pass), with the layout facts of the passes before it."""

        if kernel not in self.models:
            self.models[kernel] = KernelModel(
                kernel, self.aliases, layout_facts(self.facts, kernel.name)
            )

        return self.models[kernel].footprint(constexprs, contiguous=contiguous)

    def launch_sized(self, kernel, config):
        """The constexpr parameters besides ``config``'s that size tiles; ``None`` if a non-constexpr does."""

        constexprs = self.constexpr_parameters(kernel)
        known = dict(config)

        while True:
            try:
                self.footprint(kernel, known, contiguous=True)
            except UnknownSize as error:
                if error.args[0] not in constexprs or error.args[0] in known:
                    return None

                known[error.args[0]] = 1
                continue

            return sorted(set(known) - set(config))

    def layout(self, kernel, config, launch_sized):
        """``(strides, flags)``: the integer parameters that scale the innermost axis of an access (its innermost strides) and the constexpr flags that choose an access's address form (``ContiguousFlatAccess``), each sorted."""

        sizes = dict(config) | dict.fromkeys(launch_sized, MIN_LAUNCH_BOUND)
        flags = self.footprint(kernel, sizes, contiguous=True).layout_flags
        # A contiguous launch takes every fast path (the flags true).
        sizes |= dict.fromkeys(flags, True)
        strides = self.footprint(kernel, sizes, contiguous=True).unit_strides

        return sorted(strides), sorted(flags)

    def choose_per_launch(
        self,
        module,
        statement,
        kernel,
        gpu_configs,
        budget,
        launch_sized,
        strides,
        flags=(),
    ):
        """Configs for each power-of-two launch size and for contiguous and strided launches; emit the pruner and the launch's guards, and name the key's leading parameters (:data:`~ninetoothed_ascend.compiler.facts.LEADING_KEYS`).

        A strided launch is one with an innermost stride other than 1 or a
        layout flag false or not passed (a flattened tensor whose strides do
        not collapse: its accesses keep their gathers).
        """

        chosen = []
        table = {}
        refusals = {}
        minimum = MIN_LAUNCH_BOUND

        for contiguous in (True, False) if strides or flags else (True,):
            bound = minimum
            # Block sizes that overflowed at a smaller launch size overflow at
            # every larger one (the footprint grows with it): not measured
            # again. Most of flash attention's footprints were of block sizes
            # that overflowed, measured again at each launch size.
            overflowed = set()

            while bound <= MAX_BLOCK_SIZE:
                fixed = dict.fromkeys(launch_sized, bound) | dict.fromkeys(
                    flags, contiguous
                )

                try:
                    configs = self.choose(
                        kernel,
                        gpu_configs,
                        budget,
                        fixed,
                        extend=not launch_sized,
                        contiguous=contiguous,
                        overflowed=overflowed,
                    )
                except RewriteError as error:
                    if contiguous and not table and launch_sized and minimum > 1:
                        # Nothing fits the smallest launch size that shares
                        # its configs: size each power of two from 1.
                        minimum = bound = 1
                        overflowed = set()
                        continue

                    if contiguous and not table:
                        raise

                    # The model's numbers, then what to do.
                    refusals[contiguous] = (bound, error.args)
                    break

                for sizes in configs:
                    if sizes not in chosen:
                        chosen.append(sizes)

                table[bound, contiguous] = [chosen.index(sizes) for sizes in configs]

                if not launch_sized:
                    break

                bound *= 2

        name = statement.targets[0].id
        pruner = f"ninetoothed_fit_unified_buffer_{kernel.name}"
        insert_after_imports(
            module,
            ast.parse(
                _PRUNER.format(
                    pruner=pruner,
                    kernel=kernel.name,
                    names=tuple(launch_sized),
                    strides=tuple(strides),
                    flags_doc=f", layout flags {tuple(flags)}" if flags else "",
                    flags_test=(
                        f" and all(arguments.get(name) for name in {tuple(flags)!r})"
                        if flags
                        else ""
                    ),
                    minimum=minimum,
                    table=table,
                )
            ).body,
        )
        autotune = statement.value.func
        autotune.keywords.append(
            ast.keyword(
                "prune_configs_by",
                ast.parse(f"{{'early_config_prune': {pruner}}}", mode="eval").body,
            )
        )
        # A config tuned for one launch size or layout is not reused for another.
        self.facts.setdefault(LEADING_KEYS, {})[name] = [
            *launch_sized,
            *strides,
            *flags,
        ]

        for contiguous, (bound, refusal) in refusals.items():
            self.guard_launch(
                module,
                name,
                kernel,
                launch_sized,
                (strides, flags),
                contiguous,
                (minimum, bound),
                refusal,
            )

        return chosen

    def guard_launch(
        self, module, name, kernel, launch_sized, layout, contiguous, bounds, refusal
    ):
        """Make the launch of ``name`` raise ``UnifiedBufferOverflowError`` (a ``ValueError``) where no config fits.

        ``bounds`` is ``(minimum, bound)``: the pruner's smallest launch
        size, and the one from which no config fits a launch size (contiguous
        launches, or strided ones: an innermost stride in ``layout``'s
        strides other than 1, or one of its flags false), and the NPU
        compile would fail in ``bishengir-compile`` with "ub overflow"; the
        launch fails first, with the model's numbers and what to do
        (``refusal``, the arguments of the ``RewriteError`` of ``bound``).
        """

        strides, flags = layout
        minimum, bound = bounds

        found = self.module.launch(name)

        if found is None:
            return

        _, call = found
        arguments = launch_arguments(kernel, call)
        sizes = ", ".join(ast.unparse(arguments[item]) for item in launch_sized)
        conditions = []

        if bound > minimum:
            conditions.append(f"max(({sizes},)) > {bound // 2}")

        if not contiguous:
            conditions.append(
                "not (all(stride == 1 for stride in ("
                + "".join(f"{ast.unparse(arguments[item])}, " for item in strides)
                + ")) and all(("
                + "".join(f"{ast.unparse(arguments[item])}, " for item in flags)
                + ")))"
            )

        if contiguous:
            prefix = f"kernel `{kernel.name}` cannot run sizes "
            suffix = (
                f" of {_names(launch_sized)} on Ascend: at most {bound // 2} fits "
                f"the Unified Buffer by the UB model (docs/ub.md); at {bound}, "
                + " ".join(refusal)
            )
            message = f"{prefix!r} + repr(({sizes},)) + {suffix!r}"
        else:
            sized = (
                f" with {_names(launch_sized)} above {bound // 2}"
                if bound > minimum
                else ""
            )
            message = repr(
                f"kernel `{kernel.name}` cannot run on Ascend with an innermost stride "
                f"other than 1 ({', '.join(strides)})"
                + (
                    " or a flattened tensor whose strides do not collapse"
                    if flags
                    else ""
                )
                + f"{sized}: such accesses take 32 bytes of Unified Buffer per element "
                f"(docs/ub.md), and {refusal[0]} "
                "Pass contiguous tensors (`.contiguous()`)."
            )

        check = ast.parse(
            f"if {' and '.join(conditions)}:\n    raise {_OVERFLOW_ERROR}({message})"
        ).body[0]

        self.module.insert_before_launch(call, check)

        if not any(
            isinstance(statement, ast.ImportFrom)
            and any(alias.asname == _OVERFLOW_ERROR for alias in statement.names)
            for statement in module.body
        ):
            insert_after_imports(
                module,
                ast.parse(
                    "from ninetoothed_ascend.runtime import "
                    f"UnifiedBufferOverflowError as {_OVERFLOW_ERROR}"
                ).body,
            )

    def choose(
        self,
        kernel,
        gpu_configs,
        budget,
        fixed=None,
        extend=True,
        contiguous=True,
        overflowed=None,
    ):
        """The block sizes of at most :data:`MAX_CONFIGS` configs of ``kernel`` that fit ``budget`` bytes, from small to large.

        :param fixed: ``dict`` of the other constexpr values (a launch size,
            layout flags), or ``None``.
        :param overflowed: a ``set`` of block sizes (``tuple``, in the order
            of ``gpu_configs``' names) known to overflow, which are not
            measured; those found to overflow are added to it. ``None``: an
            empty one.
        :raises RewriteError: none fits; names the smallest footprint.
        """

        overflowed = set() if overflowed is None else overflowed
        names = list(gpu_configs[0])
        values = {
            name: sorted({config[name] for config in gpu_configs}) for name in names
        }

        def measure(sizes):
            return self.footprint(
                kernel, sizes | (fixed or {}), contiguous=contiguous
            ).peak

        def peak(sizes):
            # More than any budget for block sizes known to overflow.
            key = tuple(sizes.values())

            if key in overflowed:
                return math.inf

            bytes_ = measure(sizes)

            if bytes_ > budget:
                overflowed.add(key)

            return bytes_

        smallest = {name: values[name][0] for name in names}
        # Only a block size left at NineToothed's default range is re-sized.
        free = [
            name
            for name in names
            if (values[name][0], values[name][-1]) == DEFAULT_BLOCK_SIZE_RANGE
        ]
        # Under ``max_num_configs``, NineToothed keeps an evenly spaced sample
        # of its configs whose first has every block size at its lower bound:
        # the lower bound shows in the configs, the upper bound need not. A
        # block size at the default lower bound may then be halved (as one
        # spanning the default range), never doubled past what it shows.
        limit = self.facts.get(MAX_NUM_CONFIGS)
        sampled = limit is not None and len(gpu_configs) <= limit
        halvable = [
            name
            for name in names
            if name in free
            or (sampled and values[name][0] == DEFAULT_BLOCK_SIZE_RANGE[0])
        ]

        for name in free if extend else ():
            while values[name][-1] < MAX_BLOCK_SIZE:
                larger = smallest | {name: values[name][-1] * 2}

                if measure(larger) > budget:
                    break

                values[name].append(values[name][-1] * 2)

        fitting = _fitting(names, values, peak, budget)

        while not fitting and any(values[name][0] > 1 for name in halvable):
            for name in halvable:
                if values[name][0] > 1:
                    values[name].insert(0, values[name][0] // 2)

            fitting = _fitting(names, values, peak, budget)

        if not fitting:
            sizes = {name: values[name][0] for name in names}
            bounded = {
                name: (values[name][0], values[name][-1])
                for name in names
                if name not in halvable
            }

            raise RewriteError(
                f"kernel `{kernel.name}` has no block sizes that fit the "
                f"{budget}-byte Unified Buffer: the smallest"
                + (
                    f" within the bounds the kernel states ({_bounds(bounded)})"
                    if bounded
                    else ""
                )
                + f", {sizes}, needs {measure(sizes)} bytes by the UB model "
                "(docs/ub.md).",
                (
                    "Lower the lower_bound of ninetoothed.block_size(), tile "
                    if bounded
                    else "Tile "
                )
                + "fewer or smaller tensors per program, or set "
                "NINETOOTHED_ASCEND_UB_BYTES if the SoC's UB is larger.",
            )

        fitting.sort(
            key=lambda item: (-item[0], max(item[1].values()) / min(item[1].values()))
        )
        return [
            sizes
            for _, sizes in sorted(
                fitting[: min(limit or MAX_CONFIGS, MAX_CONFIGS)],
                key=lambda item: (item[0], list(item[1].values())),
            )
        ]


#: The name NPU variants bind :class:`~ninetoothed_ascend.runtime.UnifiedBufferOverflowError` to.
_OVERFLOW_ERROR = "ninetoothed_ascend_UnifiedBufferOverflowError"

_PRUNER = '''
def {pruner}(configs, named_args, **kwargs):
    """The configs of `{kernel}` that fit the Unified Buffer at this launch's {names} and innermost strides {strides}{flags_doc} (FitUnifiedBuffer, docs/ub.md)."""
    arguments = {{**named_args, **kwargs}}
    contiguous = all(arguments[name] == 1 for name in {strides!r}){flags_test}
    size = max((arguments[name] for name in {names!r}), default=0)
    bound = {minimum}
    while bound < size:
        bound *= 2
    return [configs[index] for index in {table!r}.get((bound, contiguous), ())]
'''


def _names(parameters):
    # NineToothed's parameter names as the user wrote them
    # (``ninetoothed_next_power_of_2_prefix_..._kernel_size_h``: ``kernel_size_h``).
    return ", ".join(name.rsplit("prefix_", 1)[-1] for name in parameters)


def _bounds(bounded):
    # ``{name: (lower, upper)}`` as the user's names and ranges.
    return ", ".join(
        f"{name.rsplit('prefix_', 1)[-1]} {lower}..{upper}"
        for name, (lower, upper) in bounded.items()
    )


def _fitting(names, values, measure, budget):
    """``[(bytes, sizes)]`` of the combinations of ``values`` within ``budget``, in ``itertools.product`` order.

    A combination at least as large in every block size as one that
    overflows is not measured: the UB model's footprint grows with each
    block size once all are at least 2. With a block size of 1 it does not
    (the innermost axis of a ``(BLOCK_SIZE_M, 1)`` tile is its strided one,
    32 bytes per element, where ``(BLOCK_SIZE_M, 2)`` is a DMA), so a
    combination with a 1 is always measured and never prunes another.
    """

    fitting = []
    overflowing = []

    for combination in itertools.product(*(values[name] for name in names)):
        ordered = min(combination, default=2) >= 2

        if ordered and any(
            all(size >= smaller for size, smaller in zip(combination, overflow))
            for overflow in overflowing
        ):
            continue

        sizes = dict(zip(names, combination))
        bytes_ = measure(sizes)

        if bytes_ <= budget:
            fitting.append((bytes_, sizes))
        elif ordered:
            overflowing.append(combination)

    return fitting


def _config(template, sizes):
    config = clone(template)
    config.args[0] = ast.Dict(
        keys=[ast.Constant(name) for name in sizes],
        values=[ast.Constant(value) for value in sizes.values()],
    )

    return config


def kernel_configs(tree):
    """Return ``[(kernel, [block sizes, ...])]`` for every ``triton.autotune`` call in ``tree``.

    Finds the calls wherever they are (at module level, or inside the factory
    :class:`~ninetoothed_ascend.compiler.npu.defer_autotune.DeferAutotune` makes).

    :param tree: ``ast.Module``.
    :return: ``list`` of ``(ast.FunctionDef, list of dict)``.
    """

    return [
        (kernel, block_sizes(call))
        for kernel, call in GeneratedModule(tree).autotune_calls()
        if kernel is not None
    ]


def launch_configs(tree, named_args):
    """Return the block sizes the NPU variant's autotuner tries for one launch.

    All of :func:`kernel_configs`, less those the ``early_config_prune`` of
    :class:`FitUnifiedBuffer` drops for the launch's sizes (kernels sized at
    the launch, e.g. by a head dimension).

    :param tree: ``ast.Module``, an NPU variant's source.
    :param named_args: ``dict`` kernel parameter name -> value, of the launch.
    :return: ``list`` of ``dict`` of block sizes (``[]`` without an autotuner).
    """

    module = GeneratedModule(tree)
    functions = module.functions()
    pruners = {
        kernel.name: keyword(call, "prune_configs_by").value.values[0].id
        for kernel, call in module.autotune_calls()
        if kernel is not None and keyword(call, "prune_configs_by") is not None
    }
    chosen = []

    for kernel, configs in kernel_configs(tree):
        if kernel.name in pruners:
            namespace = {}
            exec(  # the pruner is plain Python, generated by FitUnifiedBuffer
                compile(
                    ast.Module([functions[pruners[kernel.name]]], []), "<ub>", "exec"
                ),
                namespace,
            )
            configs = namespace[pruners[kernel.name]](configs, named_args)

        chosen.extend(configs)

    return chosen
