"""Load a tile whose rows are contiguous and whose columns are strided transposed, then transpose it in the UB.

Why one module of over 700 lines: it is one pass, whose rule (the
docstring of :class:`TransposeStridedTiles`, with its measurements, is a
fifth of the file) and whose one rewriter (matching an address, then
building its transposed load or store) a reader needs side by side.
"""

import ast
import dataclasses

from ninetoothed_ascend.compiler.facts import FLAT_ACCESS_FLAGS, TRANSPOSED_ACCESSES
from ninetoothed_ascend.compiler.generated import launch_arguments
from ninetoothed_ascend.compiler.npu.contiguous_flat_access import COLLAPSES
from ninetoothed_ascend.compiler.passes import Pass, arange_positions, tile_names
from ninetoothed_ascend.compiler.syntax import (
    REDUCTIONS,
    Transformer,
    assignments,
    binds_directly,
    clone,
    keyword,
    same,
    summands,
    walk,
)

#: Prefix of the constexpr parameter that selects the transposed load or store.
FLAG_PREFIX = "ninetoothed_ascend_transposed_"

#: The ``triton.language`` functions whose result's rank may differ from their operands'.
RANK_CHANGING = (
    *REDUCTIONS,
    *(
        f"triton.language.{name}"
        for name in (
            "reshape",
            "view",
            "ravel",
            "expand_dims",
            "broadcast_to",
            "split",
            "join",
            "interleave",
        )
    ),
)


class TransposeStridedTiles(Pass):
    """Give a 2-D load or store with unit-stride rows and strided columns a transposed DMA, decided at the launch.

    Constraint: BiShengIR plans a 2-D DMA whose innermost axis has a runtime
    stride at about 96 bytes of UB per element in fp16, where the same tile
    loaded with its unit-stride axis innermost, then transposed in the UB
    (``tl.trans``), takes 12. Measured with ascendnpu-ir 1.2.0 (Ascend910B1;
    ``bench/discrete_access.py examples/flatten/flat_sum_dim.py --bishengir
    --contiguous``, docs/benchmarks.md):
    ``flat_sum_dim`` reducing dim 0 of a contiguous ``(512, 64)`` tensor, a
    16 x 512 tile whose rows step 1 and columns 64: 786,432 B (fp16) and
    524,800 B (fp32), UB overflows; transposed, 98,432 B and 114,816 B.

    This is the tile of a reduction over any ``dim`` written the way operator
    libraries write it: ``dim`` moved last (a view), the other dimensions
    flattened into rows (``ContiguousFlatAccess`` gives the rows their affine
    fast path), so reducing a dimension other than the last of a contiguous
    tensor makes the columns the strided axis.

    Matched by structure, after ``ContiguousFlatAccess``: a ``tl.load`` whose
    address is the pointer, one flattened row group ``L * t if FLAG else
    <its digits>`` (``FLAG`` one of ``ContiguousFlatAccess``'s flags, read
    from its fact :data:`~ninetoothed_ascend.compiler.facts.FLAT_ACCESS_FLAGS`
    with the collapse test the launch sets it to, the fast path's step ``t``
    and the digit group) varying along the tile's outer axis,
    and one column term ``C * s`` varying along the innermost axis, ``s`` a
    stride parameter; every ``arange`` in the address and mask indexed 2-D
    and every other name a scalar. Rewrite::

        tl.trans(tl.load(<address and mask on FLAG's path, axes swapped>)) if T else <the load>

    ``T`` a new constexpr the launch sets to ``FLAG and t == 1 and s != 1``:
    a launch whose columns step 1 keeps the plain load, a strided one whose
    rows do not collapse keeps the gather, and both paths load the same
    elements (swapping every ``[:, None]`` and ``[None, :]`` of an address
    and its mask addresses the transposed tile).

    A ``tl.store`` of the same address form is rewritten the same way::

        tl.store(<address and mask on FLAG's path, axes swapped>,
                 tl.trans(value.to(P.dtype.element_ty))) if T else <the store>

    ``P`` the address's base pointer, ``T`` the launch's ``C and t == 1 and
    s != 1``, where ``C`` is ``FLAG``'s collapse test without the unit-stride
    test ``ContiguousFlatAccess`` adds to a store's flag (a launch that sets
    ``T`` leaves ``FLAG`` ``False``; ``FLAG``'s path is still the right
    address wherever ``C`` holds). Only where the stored value is a 2-D
    tile ``tl.trans`` can transpose (:meth:`_Rewriter.two_dimensional_tile`).
    The value is converted to the output's type before it is transposed: the
    transposed copy then takes the output's element size (transposed first,
    2 B more per element in fp16).
    Constraint (measured with ascendnpu-ir 1.2.0, Ascend910B1, 196,608 B of
    UB; ``bench/conv2d_store.py --configs all`` as of commit 9910840,
    ``git show 9910840:bench/conv2d_store.py``): conv2d's NCHW output of batch 1
    seen as ``(N * P * Q, K)``, rows stepping 1 and filters ``P * Q``, stored
    scalar (``ContiguousFlatAccess``'s store rule) takes 2
    ``DiscreteMemAccess`` (one single-element write per element of the tile,
    1,024 to 8,192) and as a plain DMA reaches ``hivmc`` in 2 of 10 configs
    (fp16) and 5 of 10 (fp32); stored transposed it is one DMA, every config
    reaches ``hivmc`` in both dtypes, for 6 B (fp16) and 4 B (fp32) of
    planned UB per output element over the scalar store (at most 149,760 B).

    Where the rows do not collapse whole but their digits below the outer
    one do (conv2d's NCHW output of batch >= 2: the flat row index ``L = n *
    P * Q + p * Q + q`` crosses images inside a tile), the transposed store
    is taken per value ``n`` of the outer digit ``L // D``, within which the
    address ``n * t0 + (L - n * D) * t`` is affine in ``L``::

        if S:
            V = tl.trans(value.to(P.dtype.element_ty))
            for n in range(F // D, (F + B - 1) // D + 1):
                tl.store(<FLAG's path with that row address, swapped>, V,
                         mask=<its mask> & (L >= n * D) & (L < (n + 1) * D))
        else:
            <the transposed store's choice above, unchanged>

    ``F + arange(0, B)`` the rows' flat index, ``S`` a new constexpr the
    launch sets to ``collapses(<the inner digits>) and not C and t == 1 and
    s != 1``: a launch whose rows collapse whole keeps the single DMA (its
    specialization compiles the ``else`` alone, the source the single DMA
    had before), one whose inner digits do not keeps the scalar store.
    Only where the rows' general path is one group of digits with no
    per-program offsets (:meth:`_Rewriter.segment_group`).
    Constraint (measured with ascendnpu-ir 1.2.0, ``bench/conv2d_store.py
    --case 0`` as of commit 9910840):
    conv2d's NCHW output of batch 2 stored this way is 1
    ``DiscreteMemAccess`` (the window load's) instead of 3, reaches
    ``hivmc`` in every config with the single DMA's planned UB. The loop
    form taken by batch 1 too (one iteration) made ``triton-adapter-opt``
    crash nondeterministically on the batch-1 launch (about 1 compile in
    10, reverted in 63f9a56); this form does not reach batch 1's compile.

    Each new flag (``T``, ``S``) is published as a :class:`TransposedAccess`
    under :data:`~ninetoothed_ascend.compiler.facts.TRANSPOSED_ACCESSES`,
    which tells the UB model which branch is the plain access.

    :Constraint: BiShengIR plans a 2-D DMA whose innermost axis has a runtime
        stride at about 96 B of UB per element (fp16); a reduction over any
        `dim` written as operator libraries write it (`dim` moved last, the
        other dims flattened into rows) makes that the tile of every reduction
        over a dim other than the last; a store of such a tile (conv2d's NCHW
        output, filters stepping `P * Q`; of batch >= 2, rows collapsing only
        within an image) is otherwise a scalar loop (`ContiguousFlatAccess`'s
        store rule)
    :Source: measured with ascendnpu-ir 1.2.0: flat_sum_dim, dim 0 of a
        contiguous `(512, 64)`, 16 x 512 tile: 786,432 B (fp16) / 524,800 B
        (fp32), UB overflows; transposed 98,432 B / 114,816 B;
        `bench/discrete_access.py`; conv2d batch 1, every config: the store 2
        `DiscreteMemAccess` → one DMA, `hivmc` in 10 of 10 configs in fp16 and
        fp32 (the plain DMA 2 and 5 of 10), +6 B (fp16) / +4 B (fp32) planned
        UB per output element over the scalar store; batch 2, one DMA per
        image: 1 `DiscreteMemAccess`, the same planned UB, `triton-adapter-opt`
        crashed in 0 of 840 compiles of batch >= 2 launches (`--repeat`; the
        loop taken by batch 1 too, 4df01ab: 12 of 120);
        `bench/conv2d_store.py` (`git show 9910840:bench/conv2d_store.py`);
        docs/benchmarks.md;
        `tests/compiler/npu/test_transpose_strided_tiles.py`
    :Rewrites: a `tl.load` whose address is one flattened row group `L * t if
        FLAG else <digits>` (`ContiguousFlatAccess`) along the outer axis plus
        one column term `C * s` along the innermost (every `arange` indexed
        2-D, no tile-valued names) becomes `tl.trans(tl.load(<FLAG's path, [:,
        None] and [None, :] swapped>)) if T else <the load>`; `T` a new
        constexpr the launch sets to `FLAG and t == 1 and s != 1`; a `tl.store`
        of the same address form and a 2-D tile value becomes `tl.store(<FLAG's
        path, swapped>, tl.trans(value.to(<the output's type>))) if T else <the
        store>`, `T` set to `C and t == 1 and s != 1`, `C` the store flag's
        collapse test without its unit-stride test; where the rows' general
        path is one digit group `L // D * t0 + <inner digits>` with no
        per-program offsets, that expression statement becomes `if S: V =
        tl.trans(value.to(<the output's type>)); for n in range(F // D, (F + B
        - 1) // D + 1): tl.store(<FLAG's path with rows (L - n * D) * t + n *
        t0, swapped>, V, mask=<its mask> & (L >= n * D) & (L < (n + 1) * D))
        else: <the choice above>`, `S` a new constexpr set to `collapses(<inner
        digits>) and not C and t == 1 and s != 1` (conv2d's NCHW output of
        batch >= 2: one transposed DMA per image a tile reaches; the loop never
        reaches a launch whose rows collapse whole, whose `ttadapter` output
        stays byte-identical; the UB model takes the `else`)
    """

    # The per-image store is a loop over the images a tile reaches.
    INTRODUCES = ("range",)

    def run(self, tree, module=None):
        self._count = 0

        return super().run(tree, module)

    def visit_Module(self, node):
        published = self.facts.get(FLAT_ACCESS_FLAGS, {})
        self._transposed = {}

        for kernel, launch_call in self.module.launches():
            flags = {
                name: flag
                for name, flag in published.items()
                if flag.kernel == kernel.name
            }

            if not flags:
                continue

            arguments = launch_arguments(kernel, launch_call)
            tiles = tile_names(self, kernel)
            rewriter = _Rewriter(self, kernel, launch_call, flags, arguments, tiles)
            rewriter.visit(kernel)

        if self._transposed:
            self.facts[TRANSPOSED_ACCESSES] = self._transposed

        return node

    def new_flag(self, kernel, access, flat_flag, form):
        """A new flag's name, published as a :class:`TransposedAccess` of ``kernel`` (``ast.FunctionDef``)."""

        name = f"{FLAG_PREFIX}{self._count}"
        self._count += 1
        self._transposed[name] = TransposedAccess(
            kernel.name, name, access, flat_flag, form
        )

        return name


@dataclasses.dataclass(frozen=True)
class TransposedAccess:
    """A constexpr parameter :class:`TransposeStridedTiles` added: the fact it publishes under :data:`~ninetoothed_ascend.compiler.facts.TRANSPOSED_ACCESSES`, by :attr:`name`.

    Where the launch sets it, the kernel takes the transposed form of
    :attr:`access`; elsewhere the access as it was. The UB model counts the
    access as it was, which bounds the transposed form
    (:class:`~ninetoothed_ascend.compiler.facts.LayoutFacts`).

    :param kernel: ``str``, the kernel's name.
    :param name: ``str``, the parameter.
    :param access: ``ast.Call``, the ``triton.language.load`` or ``store``
        as it was, the else-branch of the choice.
    :param flat_flag: ``str``, the ``ContiguousFlatAccess`` flag of its rows.
    :param form: ``"load"`` (``tl.trans(<the load transposed>) if T else
        <the load>``), ``"store"`` (``<the store transposed> if T else <the
        store>``) or ``"segments"`` (``if T: <one transposed store per image>
        else: <the store's choice>``).
    """

    kernel: str
    name: str
    access: ast.Call
    flat_flag: str
    form: str


class _Rewriter(Transformer):
    def __init__(self, owner, kernel, launch_call, flags, arguments, tiles):
        self.owner = owner
        self.kernel = kernel
        self.launch_call = launch_call
        self.flags = flags
        self.arguments = arguments
        self.tiles = tiles
        self._assigning = None
        # ``id`` of each ``<transposed store> if T else <the store>`` made
        # here -> ``(the store, FLAG, t, s)``, for :meth:`visit_Expr`.
        self._stores = {}

    def visit_Call(self, node):
        self.generic_visit(node)

        if not (
            self.owner.is_call_to(node, "triton.language.load", "triton.language.store")
            and node.args
        ):
            return node

        is_store = self.owner.is_call_to(node, "triton.language.store")
        match = self.store_match(node) if is_store else self.match(node)

        if match is None:
            return node

        flag, unit_stride, column_stride = match
        name = self.flag(
            [clone(self.flags[flag].collapses)],
            unit_stride,
            column_stride,
            (node, flag, "store" if is_store else "load"),
        )
        transposed = SwapAxes().visit(on_path(clone(node), flag))
        self.owner.rewrote()

        if is_store:
            # The value as the output's type, then transposed: swapping its
            # axes (``SwapAxes``) would not transpose the value's own tiles.
            transposed.args[1] = self.trans(node, _as_output_type(node))
            choice = ast.IfExp(ast.Name(name, ast.Load()), transposed, node)
            self._stores[id(choice)] = (node, *match)

            return choice

        return ast.IfExp(ast.Name(name, ast.Load()), self.trans(node, transposed), node)

    def flag(self, collapse_tests, unit_stride, column_stride, chosen):
        """A new constexpr parameter, which the launch sets to ``collapse_tests`` (``ast`` expressions) ``and t == 1 and s != 1``.

        ``chosen``: ``(the access, its rows' flag, the form)`` it chooses, for the fact.
        """

        name = self.owner.new_flag(self.kernel, *chosen)
        self.kernel.args.args.append(
            ast.arg(name, ast.parse("triton.language.constexpr", mode="eval").body)
        )
        test = ast.BoolOp(
            ast.And(),
            [
                *collapse_tests,
                ast.Compare(clone(unit_stride), [ast.Eq()], [ast.Constant(1)]),
                ast.Compare(clone(column_stride), [ast.NotEq()], [ast.Constant(1)]),
            ],
        )
        self.launch_call.keywords.append(ast.keyword(name, test))

        return name

    def visit_Expr(self, node):
        self.generic_visit(node)

        if id(node.value) not in self._stores:
            return node

        store, flag, unit_stride, column_stride = self._stores[id(node.value)]
        group = self.segment_group(store, flag)

        if group is None:
            return node

        # Rows that do not collapse whole (the transposed store's test fails)
        # but do within each value of their outer digit.
        inner = ast.Call(
            ast.Name(COLLAPSES, ast.Load()),
            [
                ast.Tuple([clone(size) for size in arguments[1:]], ast.Load())
                for arguments in (group.size_arguments, group.stride_arguments)
            ],
            [],
        )
        name = self.flag(
            [inner, ast.UnaryOp(ast.Not(), clone(self.flags[flag].collapses))],
            unit_stride,
            column_stride,
            (store, flag, "segments"),
        )

        # Part of the store's rewrite, counted there.
        return ast.If(
            ast.Name(name, ast.Load()),
            self.segments(store, flag, group, name),
            [node],
        )

    def segment_group(self, store, flag):
        """The :class:`~ninetoothed_ascend.compiler.npu.flat_index_digits.DigitGroup` of the rows of ``store`` (a matched store, ``FLAG`` its rows' flag), else ``None``.

        The group the fact of ``FLAG`` gives for ``store``, whose digits are
        the rows' general path; its flat index ``L`` must be one ``arange(0,
        B)`` (indexed 2-D) plus scalars, its outer digit ``L // D`` and no
        digit have an offset: then within one value ``n`` of the outer digit
        the address is ``n * t0 + (L - n * D) * t_inner``.
        """

        groups = [
            group for access, group in self.flags[flag].accesses if access is store
        ]

        if len(groups) != 1:
            return None

        (group,) = groups
        lanes = [
            term
            for term in summands(group.flat_index)
            if arange_positions(self.owner, term)
        ]
        outer = group.digits[0]

        if not (
            not any(group.offsets)
            and len(lanes) == 1
            and isinstance(lanes[0], ast.Subscript)
            and self.owner.is_call_to(lanes[0].value, "triton.language.arange")
            and len(lanes[0].value.args) == 2
            and isinstance(lanes[0].value.args[0], ast.Constant)
            and lanes[0].value.args[0].value == 0
            and isinstance(outer, ast.BinOp)
            and isinstance(outer.op, ast.FloorDiv)
            and same(outer.left, group.flat_index)
        ):
            return None

        return group

    def segments(self, store, flag, group, name):
        """The statements that store ``store``'s value transposed, once, then one masked DMA per value of ``group``'s outer digit the tile's rows reach."""

        value = ast.Name(f"{name}_value", ast.Store())
        index = f"{name}_index"
        flat = group.flat_index
        images = group.digits[0].right
        (lanes,) = [
            term for term in summands(flat) if arange_positions(self.owner, term)
        ]
        first = _sum(term for term in summands(flat) if term is not lanes)
        segment = clone(store)
        # Within image ``n``, the rows' address is ``n * t0 + (L - n * D) * t``.
        _flagged_row(segment, flag).body = _add(
            _multiply(
                ast.BinOp(
                    clone(flat), ast.Sub(), _multiply(_name(index), clone(images))
                ),
                _name(group.strides[-1]),
            ),
            _multiply(_name(index), _name(group.strides[0])),
        )
        segment = on_path(segment, flag)
        bounds = [
            ast.Compare(
                clone(flat), [ast.GtE()], [_multiply(_name(index), clone(images))]
            ),
            ast.Compare(
                clone(flat),
                [ast.Lt()],
                [_multiply(_add(_name(index), ast.Constant(1)), clone(images))],
            ),
        ]
        mask = keyword(segment, "mask")

        if mask is None:
            segment.keywords.append(ast.keyword("mask", _conjunction(bounds)))
        else:
            mask.value = _conjunction([mask.value, *bounds])

        segment = SwapAxes().visit(segment)
        segment.args[1] = _name(value.id)
        extent = clone(lanes.value.args[-1])
        loop = ast.For(
            ast.Name(index, ast.Store()),
            ast.Call(
                _name("range"),
                [
                    ast.BinOp(first, ast.FloorDiv(), clone(images)),
                    _add(
                        ast.BinOp(
                            ast.BinOp(
                                _add(clone(first), extent), ast.Sub(), ast.Constant(1)
                            ),
                            ast.FloorDiv(),
                            clone(images),
                        ),
                        ast.Constant(1),
                    ),
                ],
                [],
            ),
            [ast.Expr(segment)],
            [],
        )

        # The value as the output's type, then transposed, once: swapping its
        # axes (``SwapAxes``) would not transpose the value's own tiles.
        return [ast.Assign([value], self.trans(store, _as_output_type(store))), loop]

    def trans(self, call, node):
        """``tl.trans(node)``, spelled through the module ``call`` (a ``tl`` call) is reached by."""

        return ast.Call(
            ast.Attribute(clone(call.func.value), "trans", ast.Load())
            if isinstance(call.func, ast.Attribute)
            else ast.parse("triton.language.trans").body[0].value,
            [node],
            [],
        )

    def store_match(self, store):
        """``(FLAG, t, s)`` as :meth:`match` gives it, for a store of the matched form and a 2-D value, else ``None``."""

        if not (
            len(store.args) == 2
            and all(item.arg == "mask" for item in store.keywords)
            and isinstance(next(summands(store.args[0])), ast.Name)
        ):
            return None

        # The address first: few stores have the matched one, and finding a
        # value's rank follows the names it reads through the kernel.
        match = self.address_match(store.args[0], keyword(store, "mask"))

        if match is None or not self.two_dimensional_tile(store.args[1]):
            return None

        return match

    def two_dimensional_tile(self, value, seen=frozenset()):
        """Whether ``value`` is a 2-D tile: it holds, outside any call that changes a rank, a load of a 2-D address or a name the kernel assigns one.

        Broadcasting keeps the highest rank of the operands, so one 2-D
        operand makes the value 2-D. A name's every assignment has the same
        rank (Triton's loop-carried values keep their type), so one 2-D
        assignment (``acc = tl.zeros((M, N), ...)``) makes the name 2-D.
        """

        ranked = {
            id(inner)
            for node in walk(value)
            if self.owner.is_call_to(node, *RANK_CHANGING)
            for inner in walk(node)
        }

        for node in walk(value):
            if id(node) in ranked:
                continue

            if (
                self.owner.is_call_to(node, "triton.language.load")
                and node.args
                and arange_positions(self.owner, node.args[0])
                and self.two_dimensional(node.args[0])
            ):
                return True

            if (
                self.owner.is_call_to(
                    node, "triton.language.zeros", "triton.language.full"
                )
                and node.args
                and isinstance(node.args[0], (ast.Tuple, ast.List))
                and len(node.args[0].elts) == 2
            ):
                return True

            if (
                isinstance(node, ast.Name)
                and node.id not in seen
                and any(
                    self.two_dimensional_tile(assigned, seen | {node.id})
                    for assigned in self.assignments(node.id)
                )
            ):
                return True

        return False

    def assignments(self, name):
        """The values the kernel assigns to ``name`` (``=`` and ``+=``-style)."""

        if self._assigning is None:
            # The statements, found once; their values are read when asked,
            # as this rewriter may have replaced a load in one meanwhile.
            self._assigning = assignments(self.kernel)

        return [
            node.value
            for node in self._assigning.get(name, ())
            if node.__class__ is not ast.For
            and node.value is not None
            and binds_directly(node, name)
        ]

    def match(self, load):
        """``(FLAG, the launch's t, the launch's s)`` for a load of the matched form, else ``None``."""

        other = keyword(load, "other")

        if len(load.args) > 1 or (
            other is not None and not isinstance(other.value, ast.Constant)
        ):
            return None

        return self.address_match(load.args[0], keyword(load, "mask"))

    def address_match(self, pointer, mask):
        """``(FLAG, t, s)`` for an address ``pointer`` and ``mask`` (a keyword or ``None``) of the matched form, else ``None``."""

        rows, columns = [], []

        for term in summands(pointer):
            positions = arange_positions(self.owner, term)

            if positions == {1}:
                rows.append(term)
            elif positions == {0}:
                columns.append(term)
            elif positions:
                return None

        if not (len(rows) == 1 and len(columns) == 1):
            return None

        (row,), (column,) = rows, columns

        # The rows: one digit group ``ContiguousFlatAccess`` gave a fast path
        # (its fact's flag chooses the address form).
        if not (
            isinstance(row, ast.IfExp)
            and isinstance(row.test, ast.Name)
            and row.test.id in self.flags
            and isinstance(column, ast.BinOp)
            and isinstance(column.op, ast.Mult)
            and isinstance(column.right, ast.Name)
            and column.right.id in self.arguments
        ):
            return None

        scope = [pointer] + ([mask.value] if mask is not None else [])

        if not all(self.two_dimensional(node) for node in scope) or any(
            isinstance(name, ast.Name) and name.id in self.tiles
            for node in scope
            for name in walk(node)
        ):
            return None

        return (
            row.test.id,
            self.flags[row.test.id].inner_stride,
            self.arguments[column.right.id],
        )

    def two_dimensional(self, node):
        for inner in walk(node):
            if self.owner.is_call_to(inner, "triton.language.arange"):
                break
        else:
            return True

        subscripted = {
            id(inner.value)
            for inner in walk(node)
            if isinstance(inner, ast.Subscript)
            and isinstance(inner.slice, ast.Tuple)
            and len(inner.slice.elts) == 2
        }

        return all(
            id(inner) in subscripted
            for inner in walk(node)
            if self.owner.is_call_to(inner, "triton.language.arange")
        )


class SwapAxes(ast.NodeTransformer):
    """Swap the two axes of every 2-D index (``[:, None]`` <-> ``[None, :]``): an address and mask of a tile become those of its transpose."""

    def visit_Subscript(self, node):
        self.generic_visit(node)

        if isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2:
            node.slice.elts.reverse()

        return node


def on_path(load, flag):
    """``load`` (an ``ast`` node, changed in place) with every ``a if flag else b`` replaced by ``a``, ``flag`` a constexpr name: an access taken only where ``flag`` holds."""

    class Take(ast.NodeTransformer):
        def visit_IfExp(self, node):
            self.generic_visit(node)

            if isinstance(node.test, ast.Name) and node.test.id == flag:
                return node.body

            return node

    return Take().visit(load)


def _flagged_row(access, flag):
    """The ``a if flag else b`` summand of the address of ``access`` (a matched ``tl.load`` or ``tl.store``): its rows."""

    (row,) = [
        term
        for term in summands(access.args[0])
        if isinstance(term, ast.IfExp)
        and isinstance(term.test, ast.Name)
        and term.test.id == flag
    ]

    return row


def _name(identifier):
    return ast.Name(identifier, ast.Load())


def _add(left, right):
    return ast.BinOp(left, ast.Add(), right)


def _multiply(left, right):
    return ast.BinOp(left, ast.Mult(), right)


def _sum(terms):
    """Copies of ``terms`` added left to right; ``0`` for none."""

    total = None

    for term in terms:
        total = clone(term) if total is None else _add(total, clone(term))

    return ast.Constant(0) if total is None else total


def _conjunction(terms):
    """``terms`` (``ast`` expressions) joined by ``&``, left to right."""

    total, *rest = terms

    for term in rest:
        total = ast.BinOp(total, ast.BitAnd(), term)

    return total


def _as_output_type(store):
    """``value.to(P.dtype.element_ty)`` of a ``tl.store(P + ..., value)``: a copy of the stored value, converted to the output's element type."""

    return ast.Call(
        ast.Attribute(clone(store.args[1]), "to", ast.Load()),
        [
            ast.Attribute(
                ast.Attribute(
                    clone(next(summands(store.args[0]))), "dtype", ast.Load()
                ),
                "element_ty",
                ast.Load(),
            )
        ],
        [],
    )
