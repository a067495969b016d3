"""A model of a kernel's Unified Buffer footprint, and the Ascend SoC it is measured against.

On Ascend every vector tile of a program lives in the core's Unified Buffer
(UB, 192 KB on Atlas A2); a kernel whose tiles do not fit fails to compile
("ub overflow, requires N bits while M bits available", triton-ascend
migration guide; docs/ascend.md, "Unified Buffer"). The compile check
of this project stops before ``bishengir-compile``, where that error is
raised, so the NPU variant must fit by construction: this module estimates,
from the kernel's AST alone, the bytes of tiles live at once for given
constexpr values, and :mod:`ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer` keeps only
the autotune configs that fit.

The model (docs/ub.md has the derivation and its measured error):

* a tile is the value of a ``tl.load``, of ``tl.zeros``/``tl.full``, of
  ``tl.dot`` or of arithmetic on tiles; its shape is the broadcast of the
  ``tl.arange`` extents it is built from, with ``x[:, None]``-style
  indexing; reductions drop the reduced axis (to a scalar by default);
* pointer and mask arithmetic is not counted: triton-adapter's pointer and
  mask analyses turn structured offsets and masks into strided copies and
  sub-views (seen in its Linalg output: only ``memref.alloc`` for loads);
  but a gather's address, which they cannot analyse, holds index buffers
  (:meth:`_Model.gather_indices`);
* each tile's rows (its innermost axis) take whole 32-byte UB blocks
  (:data:`~ninetoothed_ascend.compiler.npu.ub.costs.UB_BLOCK_BYTES`); a
  load of one element takes one such block while it is loaded;
* element sizes: a load has the size of its tensor's dtype (``elem_sizes``;
  default 4 bytes, which bounds fp16, bf16 and fp32 from above, since the
  dtypes are not known when the variant is generated); a cast has its
  target's size; ``tl.dot`` accumulates in fp32; a comparison is 1 byte;
  other operations take the largest size among their operands;
* layout: a strided or gather-like load takes one 32-byte UB block per
  element, single-buffered, and so does every elementwise value computed
  from it, which BiShengIR computes in place of such an operand read for
  the last time (:func:`_layout`, :meth:`_Model.combine`);
* liveness: a variable's tile is live from its assignment to its last use,
  to the end of the loop for a variable used in a loop but defined before
  it (it is needed in the next iteration); within one statement, operands
  are live while later operands and the result are computed, and every
  operation allocates its result (no in-place reuse but the layout's
  above: an overestimate);
* double buffering: triton-ascend compiles with ``multibuffer=True`` on A2
  (``NPUOptions.multibuffer = not is_compile_on_910_95`` in
  triton/backends/ascend/compiler.py, 3.2.0), which makes
  ``bishengir-compile --enable-auto-multi-buffer`` ping-pong the load
  buffers of loops; every kernel of the NPU variant is a loop
  (:class:`~ninetoothed_ascend.compiler.npu.persistent_grid.PersistentGrid`), so each load
  counts twice.

Why one module of over 700 lines: the model is one abstract interpreter of
Triton's tile operations, a walk of the kernel's statements in execution
order that sizes every expression in one environment of tiles; what costs
UB (:mod:`~ninetoothed_ascend.compiler.npu.ub.costs`) and which tiles are
live at once (:mod:`~ninetoothed_ascend.compiler.npu.ub.liveness`) are
modules of their own.
"""

import ast
import collections
import dataclasses
import functools
import math
import operator
import typing

from ninetoothed_ascend.compiler.facts import LayoutFacts
from ninetoothed_ascend.compiler.npu.access_float64_as_bits import LOAD, STORE
from ninetoothed_ascend.compiler.npu.compensate_float64_cancellation import (
    LOAD_WITH_RESIDUAL,
)
from ninetoothed_ascend.compiler.npu.lower_float64 import DEMOTE
from ninetoothed_ascend.compiler.npu.ub.costs import (
    DEFAULT_ELEM_BYTES,
    DISCRETE_ELEM_BYTES,
    DTYPE_BYTES,
    GATHER_INDEX_BYTES,
    INDEX_ELEM_BYTES,
    MATH_TEMPORARIES,
    REDUCTION_SCRATCH,
    SELECT_BYTES,
    UB_BLOCK_BYTES,
    WHERE_CONDITION_BYTES,
)
from ninetoothed_ascend.compiler.npu.ub.liveness import (
    assigned_names,
    last_uses,
    statements_in_order,
)
from ninetoothed_ascend.compiler.syntax import (
    REDUCTIONS,
    resolve,
    same,
    structure,
    walk,
)


class UnknownSize(Exception):
    """A tile's extent depends on a value the model was not given.

    :param name: the constexpr parameter or expression it depends on.
    """


class ShapeMismatch(UnknownSize):
    """Two shapes the kernel combines do not broadcast, as the model traced them (:meth:`KernelModel.trace` only).

    Triton refuses such a kernel; where the kernel compiles, the model was
    given an extent where the kernel has another (a literal made a
    parameter in some of the places the kernel states it, not in others).

    :param shapes: the two shapes, ``tuple`` of ``int`` each.
    """


@dataclasses.dataclass(frozen=True)
class Footprint:
    """A kernel's estimated UB use for one set of constexpr values.

    :param peak: ``int``, bytes of tiles live at once, at the worst statement.
    :param loads: ``int``, bytes of all load buffers, single-buffered (the
        part triton-adapter's Linalg output shows as ``memref.alloc``).
    :param line: ``int``, the line of the kernel where the peak is reached.
    :param unit_strides: ``frozenset`` of the integer parameters taken to be
        1 (``contiguous``): the innermost strides of the kernel's accesses.
    :param layout_flags: ``frozenset`` of the parameters that choose an
        access's address form (the kernel's
        :attr:`~ninetoothed_ascend.compiler.facts.LayoutFacts.layout_flags`)
        that the accesses counted read: the fast path where true.
    """

    peak: int
    loads: int
    line: int
    unit_strides: frozenset = frozenset()
    layout_flags: frozenset = frozenset()


@dataclasses.dataclass(frozen=True)
class TileTrace:
    """The tiles of a kernel at one set of constexpr values: which axes it reduces.

    :param shapes: ``frozenset`` of ``tuple`` of ``int``, the shape of every
        tile an expression of the kernel makes.
    :param reduced: ``tuple``, for each reduction of a tile in the order the
        model meets them, the extent of the axis it reduces, or ``None`` for
        a reduction of the whole tile (or of an axis the model cannot read).
    :param stored: ``frozenset`` of ``tuple`` of ``int``, the shape of every
        store (its address and value broadcast together).
    """

    shapes: frozenset
    reduced: tuple
    stored: frozenset = frozenset()


class _Tile(typing.NamedTuple):
    # A tuple rather than a frozen dataclass: a footprint makes thousands
    # (flash attention's configs: 25,000), and a tuple is made in a third
    # of the time.
    shape: tuple
    elem: int
    # A load's buffer is allocated ``copies`` times (double buffering).
    copies: int = 1
    # Bytes per element of the buffer where they differ from ``elem`` (a
    # strided or gather-like load: DISCRETE_ELEM_BYTES).
    stored: int = 0
    # Bytes per element allocated once whatever the copies (a padded load's select and masks).
    extra: int = 0

    @property
    def bytes(self):
        if not self.shape:
            return (self.stored or self.elem) * self.copies + self.extra

        # Each buffer's rows (its innermost axis) are whole UB blocks.
        *outer, inner = self.shape
        row = _blocks(inner * (self.stored or self.elem)) * self.copies

        if self.extra:
            row += _blocks(inner * self.extra)

        return math.prod(outer) * row


def _dying(statement, position, last_use):
    """The variables ``statement`` (at ``position``; ``last_use``: name -> position) reads for the last time, each once.

    A value may be computed in place of such a variable's buffer
    (:meth:`_Model.combine`). Only a plain statement's: a loop or branch
    is costed by its header alone.
    """

    if not isinstance(
        statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)
    ):
        return frozenset()

    reads = collections.Counter(
        node.id
        for node in walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    )

    return frozenset(
        name
        for name, count in reads.items()
        if count == 1 and last_use.get(name) == position
    )


def _layout(shape, operands):
    """The bytes per element of an elementwise result of ``shape`` (``tuple`` of ``int``) made of ``operands`` (tiles or ``None``): 0 (its dtype's), or a strided load's 32-byte blocks.

    BiShengIR keeps a strided load's layout, one 32-byte UB block per
    element (:data:`DISCRETE_ELEM_BYTES`), in every elementwise value
    computed from it. Measured (ascendnpu-ir 1.2.0,
    ``--enable-memory-display``) on ntops' atan, 256 lanes: launched with
    its innermost stride 1, its 50 UB buffers are ``256xf32`` (1,024 B) and
    its plan 18,016 B; with a stride that is not 1 (a ``[2, 2, 3]`` input
    along dim 1), they are 8,192 B each and its plan 164,352 B
    (``ninetoothed-ascend check --memory-report --manifest M`` over ntops'
    recorded atan launches).
    """

    return max(
        (
            tile.stored
            for tile in operands
            # An operand broadcast along the result's innermost axis does
            # not lay that axis out.
            if tile is not None and tile.shape and tile.shape[-1] == shape[-1]
        ),
        default=0,
    )


def _blocks(row_bytes):
    """``row_bytes`` rounded up to whole UB blocks (:data:`UB_BLOCK_BYTES`)."""

    return -(-row_bytes // UB_BLOCK_BYTES) * UB_BLOCK_BYTES


def uses_dot(kernel, aliases):
    """Whether ``kernel`` (an ``ast.FunctionDef``) calls ``tl.dot``: it then runs on AI (cube) cores."""

    return any(
        isinstance(node, ast.Call)
        and resolve(node.func, aliases) == "triton.language.dot"
        for node in walk(kernel)
    )


def footprint(
    kernel,
    aliases,
    constexprs,
    elem_sizes=None,
    multibuffer=True,
    contiguous=False,
    layout=None,
):
    """Estimate the UB bytes of ``kernel`` for the given constexpr values.

    :param kernel: ``ast.FunctionDef``, a ``triton.jit`` kernel.
    :param aliases: ``dict`` from :func:`~ninetoothed_ascend.compiler.syntax.import_aliases`.
    :param constexprs: ``dict`` parameter name -> ``int``, the values of the
        constexpr parameters tiles are sized by (an autotune config, the
        launch's block sizes).
    :param elem_sizes: ``dict`` pointer parameter name -> bytes per element;
        a missing one counts :data:`DEFAULT_ELEM_BYTES`.
    :param multibuffer: ``bool``, count each load twice (see the module docstring).
    :param contiguous: ``bool``, take every integer parameter that scales an
        access's innermost axis to be 1 (a launch on contiguous tensors,
        whose strides of 1 triton-ascend's JIT specializes); otherwise only
        those given in ``constexprs`` with the value 1 are (the launch's
        specialized integers), and an access scaled by any other is strided.
    :param layout: :class:`~ninetoothed_ascend.compiler.facts.LayoutFacts`
        of the kernel, what the passes that wrote its address forms
        decided, or ``None`` (none: a kernel as NineToothed generates it).
    :return: :class:`Footprint`.
    :raises UnknownSize: a tile's extent depends on a value not in ``constexprs``.
    """

    return KernelModel(kernel, aliases, layout).footprint(
        constexprs, elem_sizes, multibuffer, contiguous
    )


class KernelModel:
    """The UB model of one kernel, for footprints at many constexpr values.

    What does not depend on the values (which names each statement reads and
    writes, which loads are the same, whether the kernel is a cube kernel)
    is worked out once, when first asked for, and each footprint is computed
    once per set of values: choosing a kernel's configs measures tens of them
    (``FitUnifiedBuffer``: 58 on ``matmul``, 71 on ``flash_attention``). The
    kernel must not change while the model is in use.

    :param kernel: ``ast.FunctionDef``, a ``triton.jit`` kernel.
    :param aliases: ``dict`` from :func:`~ninetoothed_ascend.compiler.syntax.import_aliases`.
    :param layout: :class:`~ninetoothed_ascend.compiler.facts.LayoutFacts`,
        or ``None``; see :func:`footprint`. Inside a pipeline, the passes'
        facts (:func:`~ninetoothed_ascend.compiler.facts.layout_facts`); on
        a variant's source, those kept with the variant
        (:func:`~ninetoothed_ascend.compiler.facts.stored_layout`).
    """

    def __init__(self, kernel, aliases, layout=None):
        self.kernel = kernel
        self.aliases = aliases
        self.layout = layout if layout is not None else LayoutFacts()
        self.parameters = frozenset(argument.arg for argument in kernel.args.args)
        # Node (or pair of nodes, sequence of statements) -> the fact. The
        # kernel does not change while the model is in use, so a fact, once
        # computed, holds for every footprint after it; asked for at every
        # subexpression of every footprint (tens of thousands of times for
        # flash attention's configs), a fact already known is one dict lookup.
        self._names = _Facts(
            lambda node: tuple(
                child.id for child in walk(node) if isinstance(child, ast.Name)
            )
        )
        self._calls = _Facts(
            lambda node: any(isinstance(child, ast.Call) for child in walk(node))
        )
        self._structures = _Facts(structure)
        self._same = _Facts(lambda pair: same(*pair))
        self._targets = _Facts(assigned_names)
        self._divisions = _Facts(
            lambda node: tuple(
                child
                for child in walk(node)
                if isinstance(child, ast.BinOp)
                and isinstance(child.op, (ast.FloorDiv, ast.Mod))
            )
        )
        self._layout_flags = _Facts(
            lambda pointer: frozenset(
                node.test.id
                for node in walk(pointer)
                if isinstance(node, ast.IfExp)
                and isinstance(node.test, ast.Name)
                and node.test.id in self.layout.layout_flags
            )
        )
        self._footprints = {}
        self._last_uses = {}
        self._dying = {}

    @functools.cached_property
    def hoists(self):
        """Whether the kernel's constants are hoisted into the UB once: not in a cube kernel, whose constants (its accumulator's zeros) live in L0C.

        Found when a footprint first meets a constant or an index vector: a
        kernel whose statements have none is not walked for it.
        """

        return not uses_dot(self.kernel, self.aliases)

    def footprint(
        self, constexprs, elem_sizes=None, multibuffer=True, contiguous=False
    ):
        """:func:`footprint` of this kernel; the same arguments but the kernel and aliases."""

        elem_sizes = elem_sizes or {}
        key = (
            frozenset(constexprs.items()),
            frozenset(elem_sizes.items()),
            multibuffer,
            contiguous,
        )

        if key not in self._footprints:
            self._footprints[key] = _Model(
                self, constexprs, elem_sizes, multibuffer, contiguous
            ).run()

        return self._footprints[key]

    def trace(self, constexprs, contiguous=False):
        """:class:`TileTrace` of this kernel for ``constexprs`` (as :meth:`footprint`'s).

        Stricter than :meth:`footprint`: shapes that do not broadcast
        (``(8, 257)`` with ``(8, 128)``, or a ``broadcast_to`` of ``(257,
        1)`` to ``(128, 8)``) raise, where a footprint takes the larger
        extent of each axis.

        :raises UnknownSize: a tile's extent depends on a value not in ``constexprs``.
        :raises ShapeMismatch: two shapes the kernel combines do not broadcast.
        """

        model = _Model(self, constexprs, {}, True, contiguous)
        model.reduced, model.traced_shapes, model.stored = [], set(), set()
        # Only a traced model pays for recording each expression's tile and
        # for checking each broadcast.
        model.expression = model.traced_expression
        model.broadcast = _checked_broadcast
        model.run()

        return TileTrace(
            frozenset(model.traced_shapes),
            tuple(model.reduced),
            frozenset(model.stored),
        )

    def structure(self, node):
        """:func:`~ninetoothed_ascend.compiler.syntax.structure` of ``node``: equal for the same expression written twice."""

        return self._structures[node]

    def same(self, first, second):
        """:func:`~ninetoothed_ascend.compiler.syntax.same` of two nodes: the same expression written twice."""

        return self._same[first, second]

    def names(self, node):
        """The names ``node`` reads, in the order of ``ast.walk``."""

        return self._names[node]

    def calls(self, node):
        """Whether ``node`` contains a call."""

        return self._calls[node]

    def assigned_names(self, statement):
        """:func:`~ninetoothed_ascend.compiler.npu.ub.liveness.assigned_names` of ``statement``."""

        return self._targets[statement]

    def divisions(self, node):
        """The ``//`` and ``%`` operations in ``node``."""

        return self._divisions[node]

    def layout_flags(self, pointer):
        """The layout flags (:attr:`layout`) that choose between two address forms in ``pointer`` (``a if FLAG else b``)."""

        return self._layout_flags[pointer]

    def last_uses(self, statements):
        """:func:`~ninetoothed_ascend.compiler.npu.ub.liveness.last_uses` of ``statements`` (``[(statement, loop)]``)."""

        key = tuple(statement for statement, _ in statements)

        if key not in self._last_uses:
            self._last_uses[key] = last_uses(statements)

        return self._last_uses[key]

    def dying(self, statements):
        """Per position of ``statements`` (``[(statement, loop)]``), the variables its statement reads for the last time, each once (:func:`_dying`)."""

        key = tuple(statement for statement, _ in statements)

        if key not in self._dying:
            last_use = self.last_uses(statements)
            self._dying[key] = [
                _dying(statement, position, last_use)
                for position, (statement, _) in enumerate(statements)
            ]

        return self._dying[key]


class _Facts(dict):
    """Key -> ``compute(key)``, computed at the first lookup (``dict.__missing__``): a known fact costs a dict lookup, no call."""

    def __init__(self, compute):
        super().__init__()
        self.compute = compute

    def __missing__(self, key):
        fact = self[key] = self.compute(key)

        return fact


class _Model:
    def __init__(self, analysis, constexprs, elem_sizes, multibuffer, contiguous):
        self.analysis = analysis
        self.aliases = analysis.aliases
        self.constexprs = constexprs
        self.elem_sizes = elem_sizes
        self.copies = 2 if multibuffer else 1
        self.contiguous = contiguous
        # The reduced extents and stored shapes of :meth:`KernelModel.trace`,
        # where tracing.
        self.reduced = None
        self.stored = None
        # Two tiles' broadcast shape; :meth:`KernelModel.trace` checks it.
        self.broadcast = _broadcast

    def name(self, node):
        return resolve(node, self.aliases)

    def run(self):
        kernel = self.analysis.kernel
        self.pointer_roots = {
            argument.arg: argument.arg for argument in kernel.args.args
        }
        self.tiles = {}
        self.shapes = {}
        self.values = {}
        self.unit_strides = set()
        self.layout_flags = set()
        self.hoisted = {}
        self.parameters = self.analysis.parameters
        self.loads = 0
        self.statement_loads = []
        self.dying = frozenset()
        statements = list(statements_in_order(kernel.body, None, self.branch))
        last_use = self.analysis.last_uses(statements)
        dying = self.analysis.dying(statements)
        defined_at = {}
        loop_body = {
            id(statement): position + 1
            for position, (statement, _) in enumerate(statements)
            if isinstance(statement, (ast.For, ast.While))
        }
        totals = []

        for position, (statement, loop) in enumerate(statements):
            live = sum(
                self.tiles[name].bytes
                for name, start in defined_at.items()
                if name in self.tiles and start < position <= last_use.get(name, -1)
            )
            # Identical loads within a statement are one buffer: triton-adapter
            # (CSE) emits one ``memref.alloc`` for NineToothed's repeated
            # ``load(x) - max(load(x))``.
            self.statement_loads = []
            self.statement_indices = 0
            self.statement_gathers = []
            self.dying = dying[position]
            used = self.statement(statement)
            used += max(
                self.statement_indices, self.index_liveness(self.statement_gathers)
            )
            totals.append(live + used)
            early = self.early_masks(statement) if loop is not None else 0

            for before in range(loop_body[id(loop)] if early else position, position):
                totals[before] += early

            for name in self.analysis.assigned_names(statement):
                defined_at.setdefault(name, position)

        peak, peak_position = max(
            ((total, position) for position, total in enumerate(totals)),
            default=(0, None),
        )
        peak_line = (
            kernel.lineno
            if peak_position is None
            else getattr(statements[peak_position][0], "lineno", 0)
        )

        peak += sum(self.hoisted.values())

        return Footprint(
            peak,
            self.loads,
            peak_line,
            frozenset(self.unit_strides),
            frozenset(self.layout_flags),
        )

    def statement(self, statement):
        if isinstance(statement, ast.Assign):
            tile, used, _ = self.expression(statement.value)

            for target in statement.targets:
                self.bind(target, tile, statement.value)

            return used

        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            tile, used, _ = self.expression(statement.value)
            self.bind(statement.target, tile, statement.value)

            return used

        if isinstance(statement, ast.AugAssign):
            tile, used, fresh = self.expression(statement.value)
            previous = self.tiles.get(getattr(statement.target, "id", None))
            result = self.broadcast(previous, tile)
            self.bind(statement.target, result, statement.value)

            return max(used, fresh + (result.bytes if result is not None else 0))

        if isinstance(statement, ast.Expr):
            return self.expression(statement.value)[1]

        if isinstance(statement, ast.For):
            if isinstance(statement.target, ast.Name):
                self.tiles.pop(statement.target.id, None)
                self.shapes.clear()

            return self.expression(statement.iter)[1]

        if isinstance(statement, (ast.If, ast.While)):
            return self.expression(statement.test)[1]

        if isinstance(statement, ast.Return) and statement.value is not None:
            return self.expression(statement.value)[1]

        return 0

    def bind(self, target, tile, value):
        if isinstance(target, ast.Tuple) and self._is_call_of(
            value, LOAD_WITH_RESIDUAL
        ):
            # A block and its residual: each as large as the block.
            for item in target.elts:
                self.bind(item, tile, value)

            return

        if not isinstance(target, ast.Name):
            return

        self.values[target.id] = value

        if tile is None:
            self.tiles.pop(target.id, None)
        else:
            self.tiles[target.id] = tile

        self.shapes.clear()

        root = self.pointer_root(value)

        if root is not None:
            self.pointer_roots[target.id] = root

    def _is_call_of(self, node, name):
        return isinstance(node, ast.Call) and self.name(node.func) == name

    def pointer_root(self, node):
        for name in self.analysis.names(node):
            if name in self.pointer_roots:
                return self.pointer_roots[name]

        return None

    def scalar(self, node):
        """Whether ``node`` is scalar arithmetic (a program's indices and sizes): no call, no tile; whichever branch a constexpr takes."""

        return not self.analysis.calls(node) and self.tiles.keys().isdisjoint(
            self.analysis.names(node)
        )

    def traced_expression(self, node):
        result = _Model.expression(self, node)

        if result[0] is not None:
            self.traced_shapes.add(result[0].shape)

        return result

    # An expression's (tile or None, bytes used while computing it, bytes of
    # its result that are newly allocated).
    def expression(self, node):
        if node is None:
            return None, 0, 0

        if self.scalar(node):
            return None, 0, 0

        node = self.taken(node)

        if isinstance(node, ast.Name):
            return self.tiles.get(node.id), 0, 0

        if isinstance(node, ast.Constant):
            return None, 0, 0

        if isinstance(node, ast.Call):
            return self.call(node)

        if isinstance(node, ast.Subscript):
            tile, used, fresh = self.expression(node.value)

            return _index(tile, node.slice), used, fresh

        if isinstance(node, ast.Compare):
            return self.combine([node.left, *node.comparators], elem=1)

        if isinstance(node, ast.BinOp):
            return self.combine([node.left, node.right])

        if isinstance(node, ast.BoolOp):
            return self.combine(node.values)

        if isinstance(node, ast.UnaryOp):
            return self.combine([node.operand])

        if isinstance(node, ast.IfExp):
            if (
                isinstance(node.test, ast.Name)
                and node.test.id in self.analysis.layout.transposed
            ):
                # TransposeStridedTiles' choice, a constexpr the launch sets:
                # it takes the transposed load only where the plain one has a
                # strided innermost axis, whose cost here (32 bytes per
                # element and more) bounds the transposed load's (12 to 14
                # bytes per element measured, TransposeStridedTiles); the
                # transposed store only where the plain one is a scatter (32
                # bytes per element here; the transposed store plans 4 to 6
                # more than BiShengIR's scalar store, TransposeStridedTiles).
                return self.expression(node.orelse)

            return self.combine([node.test, node.body, node.orelse])

        return None, 0, 0

    def combine(self, operands, elem=None, temporaries=0, scratch=0):
        held = used = 0
        tiles = []

        for operand in operands:
            tile, operand_used, fresh = self.expression(operand)
            used = max(used, held + operand_used)
            held += fresh
            reusable = isinstance(operand, ast.Name) and operand.id in self.dying
            tiles.append((tile, fresh, reusable))

        result = None
        fresh = 0

        for tile, _, _ in tiles:
            result = self.broadcast(result, tile)

        if result is not None:
            # A new value: one buffer, whatever its operands' buffering, laid
            # out as theirs (:func:`_layout`).
            elem = elem if elem is not None else result.elem
            stored = _layout(result.shape, [tile for tile, _, _ in tiles])
            result = _Tile(
                result.shape, max(elem, 4) if temporaries else elem, stored=stored
            )
            fresh = result.bytes
            # Computed in place of an operand of that layout that nothing
            # reads after it: a variable whose last read this is, or a value
            # this expression made (``add`` fp32, both inputs strided: two
            # buffers of 32-byte blocks, 262,144 B at 4096 lanes, BiShengIR's
            # overflow; tests/check/test_bishengir.py).
            same_layout = [
                (made, reusable)
                for tile, made, reusable in tiles
                if stored
                and tile is not None
                and tile.stored
                and tile.shape == result.shape
            ]

            if any(reusable for _, reusable in same_layout):
                # The variable's buffer is live already.
                fresh = 0
            elif any(made >= result.bytes for made, _ in same_layout):
                held -= result.bytes

        # A math function's temporaries are fp32 tiles of the result's
        # shape; ``scratch`` is bytes per lane of the result.
        scratch = math.prod(result.shape) * (4 * temporaries + scratch) if result else 0

        return result, max(used, held + fresh + scratch), fresh

    def call(self, node):
        if isinstance(node.func, ast.Attribute) and not self.is_module(node.func.value):
            # A tile's method, ``(x * y).to(tl.float16)``: the receiver is the
            # first argument of the function of that name.
            name = f"triton.language.{node.func.attr}"
            node = ast.Call(node.func, [node.func.value, *node.args], node.keywords)
        else:
            name = self.name(node.func) or ""

        function = name.removeprefix("triton.language.")
        arguments = {**dict(enumerate(node.args))}
        arguments.update({keyword.arg: keyword.value for keyword in node.keywords})

        if function == "load":
            return self.load(node, arguments)

        if name == LOAD:
            # AccessFloat64AsBits' load stands where LowerFloat64's wrapper
            # wrapped a load (``DEMOTE(load(...))``): costed as that.
            return self.converted(*self.load(node, arguments))

        if name == LOAD_WITH_RESIDUAL:
            # That load, and the block's residual beside it, made from the
            # loaded bits while they are live: one more block of its shape,
            # bound with it (:meth:`bind`).
            tile, used, fresh = self.converted(*self.load(node, arguments))

            if tile is None:
                return tile, used, fresh

            return tile, used + tile.bytes, fresh + tile.bytes

        if function == "store" or name == STORE:
            pointer = arguments.get(0, arguments.get("pointer"))
            value = arguments.get(1, arguments.get("value"))
            self.note_layout_flags(pointer)
            tile, used, fresh = self.expression(value)
            shape = self.broadcast(self.shape_of(pointer), tile)

            if self.stored is not None and shape is not None:
                self.stored.add(shape.shape)

            if shape is not None and self.discrete(pointer, shape.shape):
                if tile is None or not tile.stored:
                    # Scattered from a buffer of 32-byte blocks, as a strided
                    # load, unless the value is laid out so already.
                    scattered = math.prod(shape.shape) * DISCRETE_ELEM_BYTES
                    used = max(used, fresh + scattered)

                self.gather_indices(pointer, shape.shape)

            return None, used, 0

        if function == "arange":
            # An index vector outside a structured address: materialized as
            # int32, hoisted out of the task loop as a constant is.
            tile = _Tile(self.shape_of(node).shape, INDEX_ELEM_BYTES)

            if not self.analysis.hoists:
                return tile, tile.bytes, tile.bytes

            self.hoisted[self.analysis.structure(node)] = tile.bytes

            return tile, 0, 0

        if name == DEMOTE and len(node.args) == 1:
            return self.converted(*self.expression(node.args[0]))

        if function in ("zeros", "full"):
            shape = self.extents(node.args[0])
            dtype = arguments.get(2 if function == "full" else 1)
            dtype = arguments.get("dtype", dtype)
            tile = _Tile(shape, self.dtype_bytes(dtype))
            if not self.analysis.hoists:
                return tile, tile.bytes, tile.bytes

            # A constant: hoisted out of the task loop, one buffer for the whole kernel.
            self.hoisted[self.analysis.structure(node)] = tile.bytes

            return tile, 0, 0

        if function == "broadcast_to" and len(node.args) >= 2:
            # A new tile of the shape (``linalg.broadcast`` into a buffer of
            # its own): ntops' bincount broadcasts its input to
            # ``(block_size, T)``.
            tile, used, fresh = self.expression(node.args[0])
            shape = node.args[1] if len(node.args) == 2 else ast.Tuple(node.args[1:])
            result = _Tile(self.extents(shape), tile.elem if tile else INDEX_ELEM_BYTES)

            if tile is not None and self.broadcast is _checked_broadcast:
                _check_broadcast_to(tile.shape, result.shape)

            return result, max(used, fresh + result.bytes), result.bytes

        if function == "expand_dims" and len(node.args) == 2 and _tile_axis(node):
            # The same elements with a unit axis: no buffer of its own.
            tile, used, fresh = self.expression(node.args[0])

            if tile is None:
                return None, used, fresh

            axis = ast.literal_eval(node.args[1]) % (len(tile.shape) + 1)
            shape = (*tile.shape[:axis], 1, *tile.shape[axis:])

            return _Tile(shape, tile.elem, tile.copies, tile.stored), used, fresh

        if function == "dot":
            a, used_a, fresh_a = self.expression(node.args[0])
            b, used_b, fresh_b = self.expression(node.args[1])
            used = max(used_a, fresh_a + used_b)

            if a is None or b is None:
                return None, used, 0

            tile = _Tile((a.shape[0], b.shape[-1]), 4)

            return tile, max(used, fresh_a + fresh_b + tile.bytes), tile.bytes

        if function in ("cast", "to"):
            tile, used, held = self.expression(node.args[0])
            dtype = arguments.get(1, arguments.get("dtype"))

            if tile is None:
                return None, used, 0

            tile = _Tile(
                tile.shape, self.dtype_bytes(dtype), stored=_layout(tile.shape, [tile])
            )

            return tile, max(used, held + tile.bytes), tile.bytes

        # Python's ``max(a, b)`` and ``min(a, b)`` (ntops' relu: ``max(0.0,
        # x)``) are elementwise, not reductions.
        if name in REDUCTIONS:
            tile, used, fresh = self.expression(node.args[0])
            axis = arguments.get(1, arguments.get("axis"))
            keep = arguments.get("keep_dims")
            reduced = _reduce(tile, axis, keep)
            out = reduced.bytes if reduced is not None else 0

            if self.reduced is not None and tile is not None:
                position = _axis_position(tile, axis)
                self.reduced.append(None if position is None else tile.shape[position])

            scratch = math.prod(tile.shape) * REDUCTION_SCRATCH if tile else 0

            return reduced, max(used, fresh + out + scratch), out

        operands = [*node.args, *(keyword.value for keyword in node.keywords)]

        if function == "where":
            return self.combine(operands, scratch=WHERE_CONDITION_BYTES)

        temporaries = MATH_TEMPORARIES.get(function.rsplit(".", 1)[-1], 0)

        return self.combine(operands, temporaries=temporaries)

    def early_masks(self, statement):
        """Bytes of the statement's lane masks that BiShengIR computes at the top of the loop body, before its loads.

        A comparison of lane offsets (``arange`` and scalars, no loaded
        value), outside any address or mask of a load or store (those are
        analysed into strided copies), does not depend on the loop body's
        loads: BiShengIR's plan computes it first and keeps it, in a slot
        of the ``i32`` offsets, until it is used. Measured on
        ``instance_norm`` fp16 at 8192 lanes (``--enable-memory-display``):
        ``offsets < length`` of its second loop planned at IR position 140,
        the loop's load at 159, both live until 170. Vector-only kernels.
        """

        if not self.analysis.hoists:
            return 0

        accesses = {
            id(inner)
            for node in walk(statement)
            if isinstance(node, ast.Call)
            and self.name(node.func)
            in (
                "triton.language.load",
                "triton.language.store",
                LOAD,
                LOAD_WITH_RESIDUAL,
                STORE,
            )
            for argument in [*node.args, *(item.value for item in node.keywords)]
            for inner in walk(argument)
        }
        total = 0

        for node in walk(statement):
            if not isinstance(node, ast.Compare) or id(node) in accesses:
                continue

            calls = {
                self.name(inner.func)
                for inner in walk(node)
                if isinstance(inner, ast.Call)
            }

            if (
                "triton.language.arange" in calls
                and "triton.language.load" not in calls
                and LOAD not in calls
                and LOAD_WITH_RESIDUAL not in calls
            ):
                try:
                    shape = self.shape_of(node)
                except UnknownSize:
                    continue

                if shape is not None:
                    total += math.prod(shape.shape) * INDEX_ELEM_BYTES

        return total

    def load(self, node, arguments):
        """A load's (tile, bytes used, bytes new); ``arguments``: its own, by position and keyword."""

        for earlier, tile in self.statement_loads:
            if self.analysis.same(earlier, node):
                return tile, 0, 0

        pointer = arguments.get(0, arguments.get("pointer"))
        mask = arguments.get(1, arguments.get("mask"))
        shape = self.broadcast(self.shape_of(pointer), self.shape_of(mask))
        self.note_layout_flags(pointer)

        if shape is None:
            # One element, moved through one UB block (ntops' select_copy:
            # 194 B planned by BiShengIR).
            return None, UB_BLOCK_BYTES, 0

        root = self.pointer_root(pointer)
        elem = self.elem_sizes.get(root, DEFAULT_ELEM_BYTES)

        other = arguments.get(2, arguments.get("other"))

        if self.discrete(pointer, shape.shape):
            tile = _Tile(shape.shape, elem, 1, DISCRETE_ELEM_BYTES)
            self.gather_indices(pointer, shape.shape)
        elif _padded(mask, other):
            tile = _Tile(shape.shape, elem, self.copies, extra=SELECT_BYTES)
        else:
            tile = _Tile(shape.shape, elem, self.copies)

        self.loads += math.prod(shape.shape) * (tile.stored or tile.elem)
        self.statement_loads.append((node, tile))

        return tile, tile.bytes, tile.bytes

    def converted(self, tile, used, fresh):
        """LowerFloat64's wrapper of a block (``tile``, ``used``, ``fresh``: the block's expression)."""

        if tile is None or tile.stored:
            # Folded away for every dtype but fp64: its caller computes on a
            # strided load's buffer of 32-byte blocks itself, live with the
            # statement's other operands (add fp32 with innermost strides of
            # 3 at 4096 lanes: two such buffers, 262,144 B, BiShengIR's
            # overflow).
            return tile, used, fresh

        # Any other block: one new buffer, as for any function.
        result = _Tile(tile.shape, tile.elem)

        return result, max(used, fresh + result.bytes), result.bytes

    def note_layout_flags(self, pointer):
        self.layout_flags.update(self.analysis.layout_flags(pointer))

    def gather_indices(self, pointer, shape):
        """Count the index vectors of a gather: an address with a vector ``//`` or ``%``.

        BiShengIR computes a statement's gather addresses first, in index
        buffers that live to the statement's end. The statement counts the
        larger of :data:`GATHER_INDEX_BYTES` per gathered lane and the index
        values live at once while its gather addresses are computed
        (:meth:`index_liveness`), the larger where the digits are computed
        once per row of a wide tile (a pooling window's).
        """

        if any(
            self.shape_of(node) is not None
            for node in self.analysis.divisions(self.taken(pointer))
        ):
            self.statement_indices += math.prod(shape) * GATHER_INDEX_BYTES
            self.statement_gathers.append(pointer)

    def index_liveness(self, roots):
        """The most bytes of index values live at once while the addresses ``roots`` are computed.

        Each distinct value (the same expression written twice is one, as
        after CSE) is one tile of its shape, ``i32`` or, for a comparison
        or a mask, ``i1``, padded to whole UB blocks per row
        (:data:`UB_BLOCK_BYTES`), live from where it is computed to its
        last use, in the order Python evaluates the expressions. Measured
        (``--enable-memory-display``, ascendnpu-ir 1.2.0): ntops'
        ``max_pool1d`` (``block_size=1024``, window 2, fp32) computes its
        row digits on ``(1024, 1)`` tiles, ``memref<1024x8x1xi32>`` and
        ``memref<1024x256x1xi1>`` buffers, 462,944 B in all; this counts
        360,608 B of them, the rule before it 32,768.
        """

        first, last, size = {}, {}, {}
        booleans = set()
        position = 0

        def visit(node):
            nonlocal position
            node = self.taken(node)
            tile = self.shape_of(node)

            if tile is None or not tile.shape:
                return None

            key = self.analysis.structure(node)

            if key in first:
                return key

            children = [
                visit(child)
                for child in ast.iter_child_nodes(node)
                if isinstance(child, ast.expr)
            ]
            position += 1

            for child in children:
                if child is not None:
                    last[child] = position

            first[key] = last[key] = position

            # A comparison, or ``&``/``|`` of comparisons: a mask.
            if isinstance(node, ast.Compare) or (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, (ast.BitAnd, ast.BitOr))
                and all(child is None or child in booleans for child in children)
            ):
                booleans.add(key)

            elem = 1 if key in booleans else INDEX_ELEM_BYTES
            size[key] = _Tile(tile.shape, elem).bytes

            return key

        for root in roots:
            visit(root)

        return max(
            (
                sum(size[key] for key in first if first[key] <= at <= last[key])
                for at in range(1, position + 1)
            ),
            default=0,
        )

    def discrete(self, pointer, shape):
        """Whether an access at ``pointer`` (of tile ``shape``) is strided or gather-like on its innermost axis.

        triton-adapter lowers such an access to a scalar loop
        (``DiscreteMemAccess``) and BiShengIR gives each element a 32-byte
        block (:data:`DISCRETE_ELEM_BYTES`). The innermost axis is the last
        with more than one lane; its offset must be an ``arange`` plus
        scalars, scaled only by 1 (a literal, a constexpr or specialized
        integer equal to 1, or any integer parameter under ``contiguous``).
        """

        axis = max(
            (index for index, extent in enumerate(shape) if extent > 1), default=None
        )

        if axis is None:
            return False

        return not self.unit_stride(pointer, axis, len(shape), 0)

    def unit_stride(self, node, axis, rank, depth):
        node = self.taken(node)
        tile = self.shape_of(node)

        if tile is None or not self.along(tile, axis, rank):
            return True

        if depth > 16:
            return False

        if isinstance(node, ast.Name):
            value = self.values.get(node.id)

            return value is not None and self.unit_stride(value, axis, rank, depth + 1)

        if isinstance(node, ast.Subscript):
            return self.unit_stride(node.value, axis, rank, depth + 1)

        if isinstance(node, ast.Call):
            return self.name(node.func) == "triton.language.arange"

        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            return all(
                self.unit_stride(side, axis, rank, depth + 1)
                for side in (node.left, node.right)
            )

        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for inner, scale in ((node.left, node.right), (node.right, node.left)):
                if self.shape_of(scale) is None:
                    return self.is_one(scale) and self.unit_stride(
                        inner, axis, rank, depth + 1
                    )

        return False

    def along(self, tile, axis, rank):
        shape = (1,) * (rank - len(tile.shape)) + tuple(tile.shape)

        return shape[axis] > 1 if axis < len(shape) else False

    def is_one(self, node):
        if (
            self.contiguous
            and isinstance(node, ast.Name)
            and node.id in self.parameters
            and node.id not in self.constexprs
        ):
            self.unit_strides.add(node.id)

            return True

        try:
            return self.integer(node) == 1
        except UnknownSize:
            return False

    def is_module(self, node):
        """Whether ``node`` names an imported module (``tl``, ``triton.language``), not a value."""

        while isinstance(node, ast.Attribute):
            node = node.value

        return isinstance(node, ast.Name) and node.id in self.aliases

    def shape_of(self, node):
        """The broadcast shape of the ``arange`` terms of ``node`` (a tile of element size 0).

        Kept per node until a name is bound again (:attr:`shapes`): the
        address analyses ask for the shape of every subexpression of a
        pointer, from each of its ancestors.
        """

        if node in self.shapes:
            return self.shapes[node]

        shape = self.shapes[node] = self._shape_of(node)

        return shape

    def _shape_of(self, node):
        if node is None or self.scalar(node):
            return None

        node = self.taken(node)

        if isinstance(node, ast.Call) and self.name(node.func) in (
            "triton.language.arange",
        ):
            start, end = node.args[0], node.args[1]

            return _Tile((self.integer(end) - self.integer(start),), 0)

        if isinstance(node, ast.Subscript):
            return _index(self.shape_of(node.value), node.slice)

        if isinstance(node, ast.Name):
            return self.tiles.get(node.id)

        shape = None

        # ``ast.iter_child_nodes``' children, in its order, without its generators.
        for field in node._fields:
            value = getattr(node, field, None)

            for child in value if value.__class__ is list else (value,):
                if isinstance(child, ast.expr):
                    shape = self.broadcast(shape, self.shape_of(child))

        return shape

    def taken(self, node):
        """The branch of ``a if FLAG else b`` that Triton compiles, where ``FLAG`` is a given constexpr; else ``node``.

        ``ContiguousFlatAccess`` writes a flattened access as
        ``affine if FLAG else gather``; the launch sets ``FLAG``, and the
        two compile as different kernels (the gather path takes the UB of
        its address arithmetic, :meth:`address_bytes`).
        """

        while (
            isinstance(node, ast.IfExp)
            and isinstance(node.test, ast.Name)
            and node.test.id in self.constexprs
        ):
            node = node.body if self.constexprs[node.test.id] else node.orelse

        return node

    def branch(self, statement):
        """Whether Triton compiles the body (``True``) or the ``else`` (``False``) of the ``if`` ``statement``, where the model can tell; else ``None``.

        A test on constexpr integers (:meth:`static_test`); and
        ``TransposeStridedTiles``' choice ``if T: <the value transposed; a
        loop of transposed stores> else: <the store>``, ``T`` one of the
        kernel's :attr:`~ninetoothed_ascend.compiler.facts.LayoutFacts.transposed`:
        it takes the transposed stores only where the plain one is a
        scatter, whose cost here (32 bytes per element) bounds theirs (the
        single transposed store's, 4 to 6 bytes per element more than
        BiShengIR's scalar store; one per image, the same planned UB:
        ``TransposeStridedTiles``).
        """

        test = statement.test

        if isinstance(test, ast.Name) and test.id in self.analysis.layout.transposed:
            return False

        return self.static_test(test)

    def static_test(self, test):
        """The value of an ``if`` test on constexpr integers, or ``None`` if it is not one."""

        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None

        try:
            left, right = self.integer(test.left), self.integer(test.comparators[0])
        except UnknownSize:
            return None

        compare = {
            ast.Lt: int.__lt__,
            ast.LtE: int.__le__,
            ast.Gt: int.__gt__,
            ast.GtE: int.__ge__,
            ast.Eq: int.__eq__,
            ast.NotEq: int.__ne__,
        }.get(type(test.ops[0]))

        return None if compare is None else compare(left, right)

    def extents(self, node):
        """The extents a shape argument names: a tuple of integers, or ``x.shape`` of a tile ``x`` (``tl.zeros(x.shape, ...)``, as ntops' conv2d writes its accumulator; ``x.shape[i]`` is one of them).

        :raises UnknownSize: an extent depends on a value the model was not given.
        """

        if self.is_tile_shape(node):
            return self.tiles[node.value.id].shape

        return tuple(self.integer(item) for item in _elements(node))

    def is_tile_shape(self, node):
        """Whether ``node`` is ``x.shape`` of a tile ``x`` the model holds."""

        return (
            isinstance(node, ast.Attribute)
            and node.attr == "shape"
            and isinstance(node.value, ast.Name)
            and node.value.id in self.tiles
        )

    def integer(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value

        if isinstance(node, ast.Name):
            if node.id in self.constexprs:
                return int(self.constexprs[node.id])

            raise UnknownSize(node.id)

        if isinstance(node, ast.Subscript) and isinstance(
            node.slice, (ast.Constant, ast.UnaryOp)
        ):
            # NineToothed writes a tile's dimension as ``(d0, d1, ...)[i]``;
            # kernels, as ``x.shape[i]`` of a tile ``x``.
            index = ast.literal_eval(node.slice)

            if isinstance(index, int) and isinstance(node.value, ast.Tuple):
                return self.integer(node.value.elts[index])

            if isinstance(index, int) and self.is_tile_shape(node.value):
                return self.extents(node.value)[index]

        if isinstance(node, ast.BinOp):
            left, right = self.integer(node.left), self.integer(node.right)
            operator_ = _INTEGER_OPERATORS.get(type(node.op))

            if operator_ is not None:
                return operator_(left, right)

        raise UnknownSize(ast.unparse(node))

    def dtype_bytes(self, node):
        name = self.name(node) if node is not None else None

        if name is None and isinstance(node, ast.Constant):
            name = str(node.value)

        if name is None:
            return DEFAULT_ELEM_BYTES

        return DTYPE_BYTES.get(name.rsplit(".", 1)[-1], DEFAULT_ELEM_BYTES)


#: The operators :meth:`_Model.integer` evaluates, by ``ast`` operator class.
_INTEGER_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}


def _tile_axis(call):
    """Whether ``call``'s second argument is a literal ``int`` axis (``-1`` included)."""

    try:
        return type(ast.literal_eval(call.args[1])) is int
    except ValueError:
        return False


def _padded(mask, other):
    """Whether a load is masked and padded with something other than 0 (a ``select`` in BiShengIR)."""

    if mask is None or other is None:
        return False

    return not (isinstance(other, ast.Constant) and other.value in (0, 0.0, None))


def _elements(node):
    if isinstance(node, (ast.Tuple, ast.List)):
        return node.elts

    return [node]


def _checked_broadcast(first, second):
    """:func:`_broadcast`, raising :class:`ShapeMismatch` where two extents of an axis differ and neither is 1 (:meth:`KernelModel.trace`)."""

    result = _broadcast(first, second)

    if first is not None and second is not None:
        for shape in (first.shape, second.shape):
            padded = (1,) * (len(result.shape) - len(shape)) + shape

            if any(a not in (1, b) for a, b in zip(padded, result.shape)):
                raise ShapeMismatch((first.shape, second.shape))

    return result


def _check_broadcast_to(shape, target):
    """Raise :class:`ShapeMismatch` unless a tile of ``shape`` broadcasts to ``target`` (``tl.broadcast_to``)."""

    padded = (1,) * (len(target) - len(shape)) + shape

    if len(shape) > len(target) or any(a not in (1, b) for a, b in zip(padded, target)):
        raise ShapeMismatch((shape, target))


def _broadcast(first, second):
    if first is None:
        return second

    if second is None:
        return first

    rank = max(len(first.shape), len(second.shape))
    left = (1,) * (rank - len(first.shape)) + first.shape
    right = (1,) * (rank - len(second.shape)) + second.shape

    return _Tile(
        tuple(max(a, b) for a, b in zip(left, right)), max(first.elem, second.elem)
    )


def _index(tile, index):
    if tile is None:
        return None

    items = index.elts if isinstance(index, ast.Tuple) else [index]
    shape = list(tile.shape)
    result = []

    for item in items:
        if isinstance(item, ast.Constant) and item.value is None:
            result.append(1)
        elif isinstance(item, ast.Slice) and shape:
            result.append(shape.pop(0))
        elif shape:
            shape.pop(0)

    return _Tile(tuple(result + shape), tile.elem, tile.copies)


def _axis_position(tile, axis):
    """The position in ``tile``'s shape of the reduction axis ``axis`` (an expression), or ``None`` for the whole tile or an axis that is not a literal."""

    if axis is None or not tile.shape:
        return None

    try:
        # ``axis=-1`` is a negation (``ast.UnaryOp``), not a constant.
        axis = ast.literal_eval(axis)
    except ValueError:
        return None

    return axis % len(tile.shape) if type(axis) is int else None


def _reduce(tile, axis, keep):
    if tile is None:
        return None

    keep = isinstance(keep, ast.Constant) and keep.value is True

    if axis is None or (isinstance(axis, ast.Constant) and axis.value is None):
        return _Tile((1,) * len(tile.shape), tile.elem) if keep else None

    position = _axis_position(tile, axis)

    if position is None:
        return tile

    shape = list(tile.shape)

    if keep:
        shape[position] = 1
    else:
        del shape[position]

    return _Tile(tuple(shape), tile.elem) if shape else None
