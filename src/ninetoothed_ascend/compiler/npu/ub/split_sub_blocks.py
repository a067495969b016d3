"""Split a caller-sized block that overflows the Unified Buffer into a loop over sub-blocks."""

import ast

from ninetoothed_ascend.compiler.facts import layout_facts
from ninetoothed_ascend.compiler.generated import launch_arguments
from ninetoothed_ascend.compiler.libdevice_table import ASCEND_FUNCTIONS
from ninetoothed_ascend.compiler.npu.remap_libdevice import ASCEND_LIBDEVICE_MODULES
from ninetoothed_ascend.compiler.npu.ub.model import KernelModel, UnknownSize
from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import (
    Transformer,
    clone,
    find,
    insert_after_imports,
    tuple_element,
    walk,
)

#: Sub-blocks are powers of two no larger than this.
MAX_SUB_BLOCK = 1 << 16

#: Reductions the pass can split, with the identity and the combining function.
_REDUCTIONS = {
    "sum": ("0.0", "{acc} + {part}"),
    "max": ("float('-inf')", "triton.language.maximum({acc}, {part})"),
    "min": ("float('inf')", "triton.language.minimum({acc}, {part})"),
}

#: ``triton.language`` functions that act lane by lane (safe to run on a sub-block).
_LANEWISE = {
    "load",
    "store",
    "arange",
    "cast",
    "where",
    "maximum",
    "minimum",
    "exp",
    "exp2",
    "log",
    "log2",
    "sqrt",
    "sqrt_rn",
    "rsqrt",
    "abs",
    "sin",
    "cos",
    "erf",
    "floor",
    "ceil",
    "fma",
    "sigmoid",
    "clamp",
    "fdiv",
    "div_rn",
}

#: triton-ascend's libdevice functions that act lane by lane: those with an
#: elementwise portable meaning (``pow``, ``acosh``; not its data-movement
#: intrinsics or ``flip``).
_LANEWISE_LIBDEVICE = frozenset(
    f"{package}.libdevice.{name}"
    for package in ASCEND_LIBDEVICE_MODULES
    for name, function in ASCEND_FUNCTIONS.items()
    if function.portable is not None
)


class SplitSubBlocks(Pass):
    """Loop over ``BLOCK_SIZE_SUB`` chunks of a block the caller sizes, when it overflows the UB.

    Constraint: a program's tiles must fit the core's Unified Buffer (192 KB
    on A2; "ub overflow" otherwise), and the documented cure is an intra-core
    loop over ``BLOCK_SIZE_SUB`` chunks (triton-ascend migration and
    performance guides; docs/ascend.md, "Unified Buffer"; Liger-Kernel's
    Ascend port does the same by hand). Autotuned block sizes are fitted by
    :class:`~ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer.FitUnifiedBuffer`; this
    pass handles a block whose size is a constexpr the caller passes (a
    softmax or RMS norm with one row per program, ``BLOCK_SIZE =
    next_power_of_2(row length)``), unknown until the launch.

    Applies to a kernel whose tiles are sized by exactly one such constexpr
    ``P`` (every other ``tl.arange`` extent a literal), whose tile
    operations act lane by lane, and whose reductions are ``tl.sum``,
    ``tl.max`` or ``tl.min`` over the whole tile (no ``axis``). With ``S``
    the largest power of two for which the kernel fits the UB by the model
    (:func:`~ninetoothed_ascend.compiler.npu.ub.model.footprint` with ``P = S``),
    the body becomes::

        if P <= S:                 # constexpr: resolved at compile time
            <the original body>
        else:
            r0 = <identity>        # one loop per reduction, in order
            for j in range(0, P, S):
                <the statements it depends on, on lanes j .. j+S>
                r0 = combine(r0, reduce(<its argument on those lanes>))
            <scalar statements, the reduction replaced by r0>
            for j in range(0, P, S):
                <the statements the stores depend on, and the stores>

    A sub-block is the original tile with ``tl.arange(0, P)`` replaced by
    ``j + tl.arange(0, S)``: its masks are the original masks on those
    lanes, so lanes past the row get the same ``other`` value as before and
    the reductions see exactly the original lanes. Reductions accumulate in
    fp32; a softmax becomes the three-pass max, sum of ``exp(x - max)``,
    normalize form, as numerically stable as the one-block form. Loads are
    repeated per pass (the price of the split; only paid when ``P > S``).

    A kernel it does not apply to keeps its body, and its launch refuses a
    block of more than ``S`` lanes with an error that names the limit
    (docs/ub.md lists what cannot be split).

    A block the kernel states as a literal (ntops' pooling, made with
    ``block_size=1024``), whose lanes the model shows independent (every
    reduction along another axis), runs in one loop over sub-blocks
    (:meth:`split_literal`).

    :Constraint: the same limit for a block the caller sizes (one row per
        program)
    :Source: triton-ascend guides (`BLOCK_SIZE_SUB`); docs/ub.md
    :Rewrites: above the largest fitting power of two `S`, a loop over `S`-lane
        sub-blocks, reductions in fp32 multi-pass form (a literal block
        whose lanes are independent: the whole body, ntops' max_pool3d
        2x2x2 fp32 from 626,848 B in BiShengIR to reaching hivmc); a kernel whose tiles
        several caller-given block sizes size, or a literal block that
        overflows and cannot be split (ntops' bincount), gets, in its launch, a call to
        a `runtime.OverflowCheck` made when the module is imported, which
        evaluates the UB model for the
        launch's constexprs and specialized integers (once per distinct set)
        and raises `UnifiedBufferOverflowError` with the bytes before anything
        compiles (flat_sum_dim over the last dim of `(64, 4096)`: 786,432 B by
        the model; BiShengIR: 524,288 B needed in fp16, UB overflow)
    """

    # The loops over sub-blocks.
    INTRODUCES = ("range",)

    def visit_Module(self, node):
        budget = self.target.soc.ub_bytes
        autotuned = {autotuner.kernel for autotuner in self.module.autotuners()}

        for kernel in self.module.kernels().values():
            if kernel not in autotuned:
                self.split(kernel, budget)

        for kernel, extent, sub in self.guards:
            self.guard(node, kernel, extent, sub, budget)

        for kernel in self.launch_checks:
            self.check_at_launch(node, kernel, budget)

        return node

    def run(self, tree, module=None):
        self.guards = []
        self.launch_checks = []

        return super().run(tree, module)

    def check_at_launch(self, module, kernel, budget):
        """Make each launch of ``kernel`` evaluate the UB model for its block sizes and refuse an overflow.

        A kernel whose tiles several caller-given block sizes size (a
        reduction over rows of any length, ``flat_sum_dim``) has no one
        extent to split, and which combinations fit is known only at the
        launch; a block the kernel states as a literal that overflows and
        that :meth:`split_literal` cannot split (ntops' bincount) overflows
        at every launch; a :class:`ninetoothed_ascend.runtime.OverflowCheck`, made
        when the variant's module is imported, evaluates the model there,
        once per distinct set of constexprs.
        """

        check = f"ninetoothed_ascend_overflow_check_{kernel.name}"
        layout = layout_facts(self.facts, kernel.name)
        launches = [
            call for launched, call in self.module.launches() if launched is kernel
        ]

        if not launches:
            return

        # Made when the module is imported: the kernel's ``def`` is parsed
        # there, once, never at a launch. Which constexprs choose a
        # transposed access is a fact of ``TransposeStridedTiles``.
        insert_after_imports(
            module,
            ast.parse(
                "from ninetoothed_ascend.runtime import OverflowCheck as "
                "ninetoothed_ascend_OverflowCheck\n"
                f"{check} = ninetoothed_ascend_OverflowCheck("
                f"{ast.unparse(kernel)!r}, {self.aliases!r}, {budget}, "
                f"{tuple(sorted(layout.transposed))!r})\n"
            ).body,
        )

        for call in launches:
            arguments = launch_arguments(kernel, call)
            named = [ast.Constant(name) for name in arguments]
            values = [clone(value) for value in arguments.values()]
            self.module.insert_before_launch(
                call,
                ast.Expr(
                    ast.Call(ast.Name(check, ast.Load()), [ast.Dict(named, values)], [])
                ),
            )
            self.rewrote()

    def guard(self, module, kernel, extent, sub, budget):
        """Make the launch refuse a block the kernel cannot fit, naming the limit.

        A block larger than ``sub`` lanes would overflow the UB and fail in
        ``bishengir-compile`` with "ub overflow"; the launch fails first, with
        the model's numbers.
        """

        limit = (
            f"at most {sub} lanes fit the {budget}-byte Unified Buffer by the UB model"
            if sub
            else f"not even 1 lane fits the {budget}-byte Unified Buffer by the UB model"
        )

        for launched, call in list(self.module.launches()):
            if launched is not kernel:
                continue

            passed = launch_arguments(kernel, call).get(extent)

            if passed is None:
                continue

            block = ast.unparse(passed)
            message = (
                f"kernel `{kernel.name}` cannot run a block of {{}} lanes on "
                f"Ascend: {limit} (docs/ub.md), and SplitSubBlocks cannot "
                "split this kernel."
            )
            check = ast.parse(
                f"if {block} > {sub}:\n"
                f"    raise ValueError({message!r}.format({block}))"
            ).body[0]
            self.module.insert_before_launch(call, check)
            self.rewrote()

    def split(self, kernel, budget):
        constexprs = self.constexpr_parameters(kernel)
        extents = set()
        literals = set()
        # Found once for the extents and for :meth:`splittable`, neither of
        # which depends on their order.
        calls = find(kernel, ast.Call)

        for call in calls:
            if self.is_call_to(call, "triton.language.arange"):
                end = tuple_element(call.args[1])

                if isinstance(end, ast.Name) and end.id in constexprs:
                    extents.add(end.id)
                elif isinstance(end, ast.Constant) and type(end.value) is int:
                    literals.add(end.value)
                else:
                    return

        if len(extents) > 1:
            self.launch_checks.append(kernel)

        if not extents and not self.split_literal(kernel, literals, calls, budget):
            self.launch_checks.append(kernel)

        if len(extents) != 1:
            return

        (extent,) = extents
        sub = _largest_fitting(
            kernel, self.aliases, extent, budget, layout_facts(self.facts, kernel.name)
        )

        if sub is None:
            return

        if sub == 0 or not self.splittable(calls):
            self.guards.append((kernel, extent, sub))

            return

        splitter = _Splitter(self, extent, sub)
        first = splitter.first_tile(kernel.body)
        prefix, rest = kernel.body[:first], kernel.body[first:]
        split_body = splitter.run(rest)

        if split_body is None:
            self.guards.append((kernel, extent, sub))

            return

        test = ast.parse(f"{extent} <= {sub}", mode="eval").body
        kernel.body = [*prefix, ast.If(test, rest, split_body)]
        self.rewrote()

    def split_literal(self, kernel, literals, calls, budget):
        """Split a block whose size the kernel states as a literal (``tl.arange(0, 1024)``), when it overflows the UB.

        ntops' pooling wrappers make their kernels with ``block_size=1024``:
        NineToothed writes the extent into the kernel, and no launch can
        choose another (ntops' max_pool3d with a 2x2x2 window in fp32:
        626,848 B by BiShengIR, 196,608 available). Each of the block's
        lanes is one output whose window the kernel reduces along another
        axis, so the lanes are independent: the body runs in a loop over
        sub-blocks of the largest power of two that fits. Which literal is
        the block, and that no reduction runs along it, the UB model tells
        (:meth:`~ninetoothed_ascend.compiler.npu.ub.model.KernelModel.trace`
        with the extent made a parameter): a reduction along an axis of
        the block, a tile with two such axes or a constant tile of the
        block's shape leave the kernel as it is.

        :return: ``False`` where the kernel overflows by the model and stays
            as it is (its launches are then refused before anything
            compiles, :meth:`check_at_launch`), else ``True``.
        """

        layout = layout_facts(self.facts, kernel.name)

        try:
            model = KernelModel(kernel, self.aliases, layout)
            peak = model.footprint({}, contiguous=True).peak
        except UnknownSize:
            return True

        if peak <= budget:
            return True

        if not self.splittable(calls, along_axes=True):
            return False

        # An extent no other tile has: an axis of it is the block's.
        probe = 2 * max(literals) + 1

        for extent in sorted(literals, reverse=True):
            named = self.with_named_extent(kernel, extent)

            if named is None:
                continue

            model = KernelModel(named, self.aliases, layout)

            try:
                trace = model.trace({_EXTENT: probe}, contiguous=True)
            except UnknownSize:
                continue

            if probe in trace.reduced or any(
                shape.count(probe) > 1 for shape in trace.shapes
            ):
                continue

            sub = _largest_fitting(named, self.aliases, _EXTENT, budget, layout)

            if not sub or sub >= extent:
                continue

            splitter = _Splitter(self, extent, sub)
            first = splitter.first_tile(kernel.body)
            split_body = splitter.run(kernel.body[first:])

            if split_body is None:
                return False

            kernel.body[first:] = split_body
            self.rewrote()

            return True

        return False

    def with_named_extent(self, kernel, extent):
        """A copy of ``kernel`` with ``tl.arange(0, extent)`` ending at :data:`_EXTENT`; ``None`` if ``extent`` is also a literal of a tile's shape (``tl.zeros((1024,))``), which the copy could not follow."""

        named = clone(kernel)
        lanes = _Splitter(self, extent, None)

        for node in walk(named):
            if isinstance(node, (ast.Tuple, ast.List)) and any(
                isinstance(element, ast.Constant) and element.value == extent
                for element in node.elts
            ):
                return None

            if lanes.is_lanes(node):
                node.args[1] = ast.Name(_EXTENT, ast.Load())

        return named

    def splittable(self, calls, along_axes=False):
        """Whether the kernel whose calls (``ast.Call``) are ``calls`` acts lane by lane and reduces only whole tiles (or, ``along_axes``, also single axes)."""

        for call in calls:
            name = self.resolve(call.func) or ""

            if name in _LANEWISE_LIBDEVICE:
                continue

            if not name.startswith("triton.language."):
                continue

            function = name.removeprefix("triton.language.")

            if function in _REDUCTIONS:
                if not along_axes and (len(call.args) > 1 or call.keywords):
                    return False
            elif function not in _LANEWISE and function not in (
                "program_id",
                "num_programs",
                "full",
                "zeros",
                "constexpr",
            ):
                return False

        return True


#: The name a literal block extent gets while the UB model sizes it.
_EXTENT = "ninetoothed_ascend_block_extent"


def _largest_fitting(kernel, aliases, extent, budget, layout):
    """The largest power of two of lanes that fits; 0 if none does, ``None`` if the model cannot tell."""

    size = MAX_SUB_BLOCK
    model = KernelModel(kernel, aliases, layout)

    try:
        while size >= 1:
            if model.footprint({extent: size}, contiguous=True).peak <= budget:
                return size

            size //= 2
    except UnknownSize:
        return None

    return 0


class _Splitter:
    def __init__(self, owner, extent, sub):
        self.owner = owner
        self.extent = extent
        self.sub = sub
        self.count = 0

    def is_lanes(self, node):
        if not self.owner.is_call_to(node, "triton.language.arange"):
            return False

        end = node.args[1]

        if isinstance(self.extent, int):
            return isinstance(end, ast.Constant) and end.value == self.extent

        return isinstance(end, ast.Name) and end.id == self.extent

    def first_tile(self, body):
        """The index of the first statement of ``body`` that reads the block's lanes: the program-id decomposition before it stays outside the split (PersistentGrid loops over it)."""

        return next(
            index
            for index, statement in enumerate(body)
            if self.depends(statement, set())
        )

    def depends(self, node, tiles):
        return any(
            self.is_lanes(child) or (isinstance(child, ast.Name) and child.id in tiles)
            for child in walk(node)
        )

    def run(self, body):
        output = []
        definitions = []
        tiles = set()
        stores = []

        for statement in body:
            if not isinstance(statement, (ast.Assign, ast.Expr)):
                if self.depends(statement, tiles):
                    return None

                output.append(statement)
                continue

            # The statement stays in the unsplit branch: what this one keeps
            # is a copy (tile statements are copied by ``chunk``, per loop).
            if self.reductions(statement.value, tiles):
                statement = clone(statement)

                for reduction in self.reductions(statement.value, tiles):
                    name = f"ninetoothed_reduced_{self.count}"
                    self.count += 1
                    output.extend(self.reduce(reduction, name, definitions, tiles))
                    _replace(statement, reduction, ast.Name(name, ast.Load()))

            if isinstance(statement, ast.Expr):
                if self.owner.is_call_to(
                    statement.value, "triton.language.store"
                ) and self.depends(statement, tiles):
                    stores.append(statement)
                elif self.depends(statement, tiles):
                    return None
                else:
                    output.append(clone(statement))

                continue

            targets = [
                target.id
                for target in statement.targets
                if isinstance(target, ast.Name)
            ]

            if len(targets) != len(statement.targets):
                return None

            if self.depends(statement.value, tiles):
                if any(target in tiles for target in targets):
                    return None  # a tile variable assigned twice

                definitions.append(statement)
                tiles.update(targets)
            else:
                tiles.difference_update(targets)
                output.append(clone(statement))

        if stores:
            needed = self.needed(stores, definitions)
            output.append(self.loop([*needed, *stores]))

        return output

    def reductions(self, node, tiles):
        """Outermost-last reductions over tiles in ``node``, inner ones first."""

        finder = _Reductions(self, tiles)
        finder.visit(node)

        return finder.found

    def reduce(self, call, name, definitions, tiles):
        function = self.owner.resolve(call.func).removeprefix("triton.language.")
        identity, combine = _REDUCTIONS[function]
        part = ast.unparse(ast.Call(call.func, [call.args[0]], []))
        update = ast.parse(
            f"{name} = "
            + combine.format(
                acc=name, part=f"triton.language.cast({part}, triton.language.float32)"
            )
        ).body[0]
        init = ast.parse(
            f"{name} = triton.language.full((), {identity}, triton.language.float32)"
        ).body[0]
        needed = self.needed([update], definitions)

        return [init, self.loop([*needed, update])]

    def needed(self, statements, definitions):
        names = set()

        for statement in statements:
            names |= {node.id for node in find(statement, ast.Name)}

        chosen = []

        for definition in reversed(definitions):
            targets = {target.id for target in definition.targets}

            if targets & names:
                chosen.append(definition)
                names |= {node.id for node in find(definition.value, ast.Name)}

        return list(reversed(chosen))

    def loop(self, statements):
        loop = ast.parse(
            f"for ninetoothed_sub_block in range(0, {self.extent}, {self.sub}):\n    pass"
        ).body[0]
        loop.body = [self.chunk(statement) for statement in statements]

        return loop

    def chunk(self, statement):
        """A copy of ``statement`` on the lanes ``j .. j+S``: its ``arange(0, P)`` becomes ``j + arange(0, S)``."""

        return clone(statement, self._take_lanes)

    def _take_lanes(self, node):
        if type(node) is ast.Call and self.is_lanes(node):
            node.args[1] = ast.Constant(self.sub)

            return ast.BinOp(
                ast.Name("ninetoothed_sub_block", ast.Load()), ast.Add(), node
            )

        return node


# The visitors are module-level classes, not made per call: a class made
# per call was a new class each time, and each paid again for its
# ``Transformer`` setup (which node types its visit can skip).


class _Reductions(Transformer):
    """Collect the reductions over tiles in what it visits, inner ones first (:attr:`found`)."""

    def __init__(self, splitter, tiles):
        self.splitter = splitter
        self.tiles = tiles
        self.found = []

    def visit_Call(self, call):
        self.generic_visit(call)
        name = self.splitter.owner.resolve(call.func) or ""
        function = name.removeprefix("triton.language.")

        # A reduction along one axis is lane by lane along the others
        # (``split_literal`` made sure none runs along the block).
        whole = len(call.args) == 1 and not call.keywords

        if (
            name.startswith("triton.language.")
            and function in _REDUCTIONS
            and whole
            and self.splitter.depends(call.args[0], self.tiles)
        ):
            self.found.append(call)

        return call


class _Replace(Transformer):
    def __init__(self, old, new):
        self.old = old
        self.new = new

    def visit(self, node):
        if node is self.old:
            return self.new

        return super().visit(node)


def _replace(tree, old, new):
    _Replace(old, new).visit(tree)
