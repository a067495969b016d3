"""Split a caller-sized block that overflows the Unified Buffer into a loop over sub-blocks.

Why one module of over 700 lines: it is one pass. A block a constexpr
sizes and a block the kernel states as a literal are split by the same
rewriter (``_Splitter``) under the same rule of what acts lane by lane
(:meth:`SplitSubBlocks.splittable`), and what neither can split is refused
at the launch by the same guards; the literal case only adds how the
block's places are told apart, which a reader needs beside the rewriter
that then changes exactly those places.
"""

import ast
import itertools

from ninetoothed_ascend.compiler.facts import layout_facts
from ninetoothed_ascend.compiler.generated import launch_arguments
from ninetoothed_ascend.compiler.libdevice_table import ASCEND_FUNCTIONS
from ninetoothed_ascend.compiler.npu.remap_libdevice import ASCEND_LIBDEVICE_MODULES
from ninetoothed_ascend.compiler.npu.scalarize_tile_lower_bounds import (
    index_lower_bound,
)
from ninetoothed_ascend.compiler.npu.ub.model import KernelModel, UnknownSize
from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import (
    Transformer,
    clone,
    find,
    insert_after_imports,
    is_zero,
    structure,
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
    (:meth:`split_literal`); where the same literal sizes another axis
    (ntops' bincount: 128 bins and 128 input lanes), the places the kernel
    states it are told apart by their structure, and only the block's are
    rewritten.

    :Constraint: the same limit for a block the caller sizes (one row per
        program)
    :Source: triton-ascend guides (`BLOCK_SIZE_SUB`); docs/ub.md
    :Rewrites: above the largest fitting power of two `S`, a loop over `S`-lane
        sub-blocks, reductions in fp32 multi-pass form (a literal block
        whose lanes are independent: the whole body, ntops' max_pool3d
        2x2x2 fp32 from 626,848 B in BiShengIR to reaching hivmc; ntops'
        bincount at 100 inputs, its 128 bins told from its 128 input lanes,
        from 235,552 B in BiShengIR to 121,344 B planned); a kernel whose tiles
        several caller-given block sizes size, or a literal block that
        overflows and cannot be split (a prefix sum), gets, in its launch, a call to
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
        that :meth:`split_literal` cannot split (a prefix sum) overflows
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
        sub-blocks of the largest power of two that fits.

        The same literal may size two axes (ntops' bincount at 65 to 128
        inputs: 128 bins per program and 128 input lanes, both
        ``tl.arange(0, 128)``). The places the kernel states it are told
        apart by their structure (:meth:`literal_groups`): an ``arange``
        by the indexing that places it on an axis (``[:, None]``), a
        dimension NineToothed writes as ``(1, 128)[1]`` by its tuple and
        index. Which of these groups are the block, and that no reduction
        runs along it, the UB model tells: the groups, all of them first,
        then fewer, are made a parameter (:meth:`with_named_extent`) and
        traced (:meth:`~ninetoothed_ascend.compiler.npu.ub.model.KernelModel.trace`)
        at an extent no tile has; a choice is the block where the trace
        broadcasts every shape consistently (a group left out that meets
        one chosen raises
        :class:`~ninetoothed_ascend.compiler.npu.ub.model.ShapeMismatch`),
        no tile has the extent on two axes, no reduction runs along it and
        a store writes it. A reduction along an axis of the block, a tile
        with two such axes or a constant tile written with the literal in
        its shape (``tl.zeros((1024, 8))``) leave the kernel as it is.

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
            groups = self.literal_groups(kernel, extent)

            for chosen in _unions(groups):
                named = self.with_named_extent(kernel, extent, chosen)
                model = KernelModel(named, self.aliases, layout)

                try:
                    trace = model.trace({_EXTENT: probe}, contiguous=True)
                except UnknownSize:
                    continue

                if (
                    probe in trace.reduced
                    or any(shape.count(probe) > 1 for shape in trace.shapes)
                    or not any(probe in shape for shape in trace.stored)
                ):
                    continue

                sub = _largest_fitting(named, self.aliases, _EXTENT, budget, layout)

                if not sub or sub >= extent:
                    continue

                splitter = _Splitter(self, _EXTENT, sub, total=extent)
                first = splitter.first_tile(named.body)
                split_body = splitter.run(named.body[first:])

                if split_body is None:
                    continue

                kernel.body[first:] = split_body
                self.rewrote()

                return True

        return False

    def literal_groups(self, kernel, extent):
        """The places ``kernel`` states the literal ``extent`` as a tile's extent, grouped by their structure.

        An ``tl.arange(0, extent)`` is grouped by the indexing applied to it
        (``[:, None]``, ``[None, :]``, none), which places it on an axis; a
        dimension written as a tuple display indexed by a literal
        (``(1, 128)[1]``, NineToothed's ``x.shape[1]``) by the tuple and the
        index. A dimension that is not an ``arange``'s end or an element of
        the shape of ``tl.broadcast_to``, ``tl.zeros`` or ``tl.full`` (a
        scalar: ``offsets < (128,)[0]``) keeps its group out of any choice:
        it means the whole block, which the split keeps.

        :return: ``list`` of the groups that can be chosen, each a ``list`` of
            nodes of ``kernel``, in the order the kernel first states them;
            empty where ``extent`` is also a literal of a tuple no index
            reads (``tl.zeros((1024,))``), which a split could not follow,
            or an ``arange`` of it does not start at 0.
        """

        nodes = list(walk(kernel))
        patterns = {}
        indexed = set()
        shaped = set()

        for node in nodes:
            if isinstance(node, ast.Subscript):
                if self.is_call_to(node.value, "triton.language.arange"):
                    patterns[id(node.value)] = structure(node.slice)

                if tuple_element(node) is not node:
                    indexed.add(id(node.value))
            elif self.is_call_to(node, "triton.language.arange"):
                if len(node.args) == 2 and _is_literal(node.args[0], 0):
                    shaped.add(id(node.args[1]))
            elif self.is_call_to(node, *_SHAPES):
                function = self.resolve(node.func)
                shapes = node.args[_SHAPES[function]]
                shapes += [item.value for item in node.keywords if item.arg == "shape"]

                for shape in shapes:
                    shaped.add(id(shape))
                    shaped.update(id(item) for item in getattr(shape, "elts", ()))

        groups = {}
        fixed = set()

        for node in nodes:
            if self.is_call_to(node, "triton.language.arange"):
                if len(node.args) != 2 or not _is_literal(node.args[1], extent):
                    continue

                if not _is_literal(node.args[0], 0):
                    return []

                key = ("arange", patterns.get(id(node)))
            elif isinstance(node, ast.Subscript) and tuple_element(node) is not node:
                if not _is_literal(tuple_element(node), extent):
                    continue

                index = node.slice.value % len(node.value.elts)
                key = ("dimension", structure(node.value), index)

                if id(node) not in shaped:
                    fixed.add(key)
            elif isinstance(node, (ast.Tuple, ast.List)):
                if id(node) not in indexed and any(
                    _is_literal(item, extent) for item in node.elts
                ):
                    return []

                continue
            else:
                continue

            groups.setdefault(key, []).append(node)

        return [nodes for key, nodes in groups.items() if key not in fixed]

    def with_named_extent(self, kernel, extent, chosen):
        """A copy of ``kernel`` with the places of ``chosen`` (groups of :meth:`literal_groups` of ``kernel``) stating :data:`_EXTENT` for ``extent``: an ``arange`` ending there, a dimension (``(128,)[0]``) that name."""

        chosen = {id(node) for group in chosen for node in group}
        positions = [
            index for index, node in enumerate(walk(kernel)) if id(node) in chosen
        ]
        named = clone(kernel)
        copies = list(walk(named))
        replaced = {}

        for index in positions:
            node = copies[index]

            if isinstance(node, ast.Call):
                node.args[1] = ast.Name(_EXTENT, ast.Load())
            else:
                replaced[id(node)] = ast.Name(_EXTENT, ast.Load())

        for node in copies:
            for field in node._fields:
                value = getattr(node, field, None)

                if isinstance(value, list):
                    value[:] = [replaced.get(id(item), item) for item in value]
                elif id(value) in replaced:
                    setattr(node, field, replaced[id(value)])

        return named

    def splittable(self, calls, along_axes=False):
        """Whether the kernel whose calls (``ast.Call``) are ``calls`` acts lane by lane and reduces only whole tiles (or, ``along_axes``, also single axes).

        ``along_axes`` (a literal block, :meth:`split_literal`) also takes
        ``tl.expand_dims`` and ``tl.broadcast_to``: the split writes the
        block's extent into their shapes where the kernel states it there
        (``(128,)[0]``), and the model's trace refuses a shape left
        inconsistent. A block a constexpr sizes keeps them out: its split
        rewrites only its ``arange``.
        """

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
                if not (along_axes and _places_lanes(call, function)):
                    return False

        return True


#: The name a literal block extent gets while the UB model sizes it.
_EXTENT = "ninetoothed_ascend_block_extent"

#: ``triton.language`` functions whose shape may state a literal block's
#: extent: the positional arguments that are their shape.
_SHAPES = {
    "triton.language.broadcast_to": slice(1, None),
    "triton.language.zeros": slice(0, 1),
    "triton.language.full": slice(0, 1),
}

#: Of a literal's groups (:meth:`SplitSubBlocks.literal_groups`), at most
#: this many are tried in every union (63 traces); more are tried all
#: together only.
_MAX_GROUPS = 6


def _unsubscripted(node):
    # ``x[:, None]`` -> ``x``: indexing that only adds axes keeps the lanes.
    while type(node) is ast.Subscript:
        node = node.value

    return node


def _is_literal(node, value):
    return (
        isinstance(node, ast.Constant)
        and type(node.value) is int
        and node.value == value
    )


def _places_lanes(call, function):
    """Whether ``call`` (of ``triton.language.<function>``) places a tile's lanes on other axes in a form the UB model follows, moving none between lanes of the block: ``expand_dims(x, <int>)``, ``broadcast_to(x, <shape>)`` (a literal block's split takes them: :meth:`SplitSubBlocks.splittable`)."""

    if call.keywords:
        return False

    if function == "expand_dims":
        return len(call.args) == 2 and _is_integer(call.args[1])

    return function == "broadcast_to" and len(call.args) >= 2


def _is_integer(node):
    """Whether ``node`` is a literal ``int`` (``-1`` included)."""

    try:
        return type(ast.literal_eval(node)) is int
    except ValueError:
        return False


def _unions(groups):
    """The unions of ``groups`` to try as a literal block: all of them first, then fewer, in the kernel's order."""

    if len(groups) > _MAX_GROUPS:
        return [groups] if groups else []

    return [
        list(chosen)
        for size in range(len(groups), 0, -1)
        for chosen in itertools.combinations(groups, size)
    ]


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
    """Rewrite a body into loops over ``sub``-lane sub-blocks of the block ``tl.arange(0, extent)``.

    ``extent`` is a constexpr's name, or, with ``total``, the name
    :data:`_EXTENT` that stands for the literal ``total`` in the places
    :meth:`SplitSubBlocks.with_named_extent` chose (an ``arange``'s end or
    a dimension of a shape): every mention of it is then the block's
    extent, ``sub`` in a sub-block.
    """

    def __init__(self, owner, extent, sub, total=None):
        self.owner = owner
        self.extent = extent
        self.sub = sub
        self.total = extent if total is None else total
        self.named = total is not None
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
            self.is_lanes(child)
            or (
                isinstance(child, ast.Name)
                and (child.id in tiles or (self.named and child.id == self.extent))
            )
            for child in walk(node)
        )

    def run(self, body):
        output = []
        definitions = []
        # The names assigned per sub-block, and those of them whose values
        # depend on the block's lanes (the same names, but for a name
        # :meth:`pulled` in).
        tiles = set()
        lanes = set()
        stores = []
        pulled = self.pulled(body) if self.named else set()

        for statement in body:
            if not isinstance(statement, (ast.Assign, ast.Expr)):
                if self.depends(statement, tiles):
                    return None

                output.append(statement)
                continue

            # The statement stays in the unsplit branch: what this one keeps
            # is a copy (tile statements are copied by ``chunk``, per loop).
            if self.reductions(statement.value, lanes):
                statement = clone(statement)

                for reduction in self.reductions(statement.value, lanes):
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

            if self.depends(statement.value, tiles) or pulled.intersection(targets):
                if not self.named and any(target in tiles for target in targets):
                    return None  # a tile variable assigned twice

                definitions.append(statement)
                tiles.update(targets)

                if self.depends(statement.value, lanes):
                    lanes.update(targets)
                else:
                    lanes.difference_update(targets)
            else:
                tiles.difference_update(targets)
                lanes.difference_update(targets)
                output.append(clone(statement))

        if stores:
            needed = self.needed(stores, definitions)
            output.append(self.loop([*needed, *stores]))

        return output

    def pulled(self, body):
        """The names ``body`` assigns both per sub-block and outside the loops, all of whose assignments then run per sub-block.

        A name assigned outside and again inside a loop would be carried by
        the loop with two shapes (ntops' bincount: ``col_valid_b =
        expand_dims(col_valid, 0)``, the same on every sub-block, then
        ``col_valid_b = broadcast_to(col_valid_b, ((128,)[0], ...))``);
        Triton refuses that.
        """

        pulled = set()

        while True:
            tiles, inside, outside, found = set(), set(), set(), set()

            for statement in body:
                if not isinstance(statement, ast.Assign):
                    continue

                targets = {
                    target.id
                    for target in statement.targets
                    if isinstance(target, ast.Name)
                }

                if self.depends(statement.value, tiles) or targets & pulled:
                    found |= targets & outside
                    inside |= targets
                    tiles |= targets
                else:
                    found |= targets & inside
                    outside |= targets
                    tiles -= targets

            if found <= pulled:
                return pulled

            pulled |= found

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
            f"for ninetoothed_sub_block in range(0, {self.total}, {self.sub}):\n    pass"
        ).body[0]
        loop.body = [self.chunk(statement) for statement in statements]

        return loop

    def chunk(self, statement):
        """A copy of ``statement`` on the lanes ``j .. j+S``: its ``arange(0, P)`` becomes ``j + arange(0, S)``."""

        # The ``j + arange(0, S)`` sums this copy makes (their ids).
        self.taken = set()
        chunk = clone(statement, self._take_lanes)

        # The block's other extents (``(128,)[0]`` of a shape), after its aranges.
        return clone(chunk, self._take_extent) if self.named else chunk

    def _take_extent(self, node):
        if type(node) is ast.Name and node.id == self.extent:
            return ast.Constant(self.sub)

        return node

    def _take_lanes(self, node):
        if type(node) is ast.Call and self.is_lanes(node):
            node.args[1] = ast.Constant(self.sub)
            lanes = ast.BinOp(
                ast.Name("ninetoothed_sub_block", ast.Load()), ast.Add(), node
            )
            self.taken.add(id(lanes))

            return lanes

        # ``j + arange(0, S) >= 0`` holds exactly when ``j >= 0``: ``j`` is a
        # multiple of ``S``. The lanes' form, a runtime lower bound in a
        # mask, makes triton-adapter-opt 3.2.0 read freed memory
        # (ScalarizeTileLowerBounds has the rule and its source; measured
        # on ntops' lp_pool1d with block_size=1024 under valgrind: 838
        # errors with that one term, 0 without it).
        if (
            type(node) is ast.Compare
            and len(node.ops) == 1
            and type(node.ops[0]) is ast.GtE
            and is_zero(node.comparators[0])
            and id(_unsubscripted(node.left)) in self.taken
        ):
            return index_lower_bound(
                ast.Name("ninetoothed_sub_block", ast.Load()), node
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
