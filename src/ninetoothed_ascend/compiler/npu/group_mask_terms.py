"""The NPU pass :class:`GroupMaskTerms`."""

import ast

from ninetoothed_ascend.compiler.passes import MaskPass
from ninetoothed_ascend.compiler.syntax import same, walk
from ninetoothed_ascend.compiler.traced_tensors import TracedTensors


class GroupMaskTerms(MaskPass):
    """Combine a mask's ``&`` terms tile axis by tile axis, scalars first, each distinct term once.

    Constraint: BiShengIR gives every vector operation of the NPU kernel its
    own Unified Buffer allocation, and a mask is combined in the order it is
    written. NineToothed writes a mask as one left-to-right ``&`` chain of
    bound checks, one or two per dimension of every level of the arrangement,
    row checks (``arange(0, M)[:, None] ...``) and column checks
    (``arange(0, K)[None, :] ...``) interleaved, some repeated; from its first
    column check on, every further term is an ``&`` on the whole ``M x K``
    tile. conv2d's implicit-GEMM load (a 64 x 32 tile) became 59 such
    ``arith.andi`` in the ``ttadapter`` Linalg and 544 UB allocations in the
    vector function, and ``bishengir-compile`` (ascendnpu-ir 1.2.0) did not
    get through ``hivm-plan-memory`` in 300 s; grouped, 5 whole-tile ``andi``
    remain and the same config reaches ``hivmc`` in 23 s (measured here,
    docs/benchmarks.md, "BiShengIR compile time").

    The rewrite is exact: the operands of a mask's ``&`` chain are boolean
    (Triton refuses a mask of another type, and ``&`` with a non-boolean
    operand is not boolean), ``&`` on booleans is associative, commutative and
    idempotent, broadcasting gives the same shape in any order, and the terms
    are side-effect-free expressions, all evaluated in any order. A term's
    tile axes are read from the ``arange`` calls it is built from and their
    ``[:, None]``-style subscripts; a term with none is a scalar. Terms with
    the same axes are combined first, in their original order; then the
    groups, fewest axes first.

    Triton 3.2's frontend in triton-ascend traces ``a & b`` as
    ``b.__rand__(a)`` where ``a`` is not a tensor, and its ``and_`` then
    fails on the Python bool ``a`` (``'bool' object has no attribute
    'type'``: triton-ascend 3.2.0 ``triton_patch/language/semantic.py``,
    ``and_``, reads ``input.type`` first); ``tensor & bool`` is fine. A
    term of literals, constexprs and integer parameters is such a bool in
    the launches that specialize those integers to constants (an integer
    argument equal to 1, so any size-1 dimension): ntops' reductions along
    a dim with a size-1 output dimension begin a scalar group with
    ``0 < (size - (B - 1) - 1 + B - 1) // B + 1``. So the chain starts with
    a term that is a tensor in every launch
    (:class:`~ninetoothed_ascend.compiler.traced_tensors.TracedTensors`):
    the first such scalar term leads its group; where no scalar term is
    one, the scalar terms follow the first term of the next group (which
    holds an ``arange``); terms with no name (``0 < 1``) go last. Every
    ``&`` of the chain then has a tensor on its left
    (``tests/compiler/npu/test_group_mask_terms.py``, level 1 and 2).

    :Constraint: BiShengIR gives every vector operation its own UB buffer, and
        combines a mask in the order written; NineToothed's row and column
        bound checks come interleaved, so every `&` after the first column term
        is a whole-tile `vand`: conv2d's 64 x 32 load, 59 whole-tile
        `arith.andi`, 544 UB allocations, `hivm-plan-memory` not done in 300 s
    :Source: measured with `bishengir-compile` (ascendnpu-ir 1.2.0),
        docs/benchmarks.md "BiShengIR compile time";
        `tests/compiler/npu/test_group_mask_terms.py`,
        `tests/check/test_compile_check.py::test_conv2d_mask_has_few_whole_tile_ands`
    :Rewrites: a mask's `&` chain becomes: distinct terms grouped by the tile
        axes they vary along (read from `arange` and its `[:, None]`
        subscripts), each group combined in its original order, groups fewest
        axes first (scalars, rows, columns); exact (`&` on booleans)
    """

    def run(self, tree, module=None):
        # A mask outside any function (a module of tests) is read against
        # the module's assignments.
        self._scope, self._tensors = tree, None

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        # Masks are read against the kernel they are in: which names hold
        # tensors is a fact of its assignments, found at its first mask.
        enclosing = self._scope, self._tensors
        self._scope, self._tensors = node, None
        self.generic_visit(node)
        self._scope, self._tensors = enclosing

        return node

    def rewrite_mask(self, mask):
        # Each term once, where it first occurs, as the last of its copies
        # (what a dictionary keyed by ``ast.dump`` keeps); compared with
        # :func:`same`, which stops at the first difference.
        terms = []

        for term in _conjuncts(mask):
            for index, kept in enumerate(terms):
                if same(kept, term):
                    terms[index] = term
                    break
            else:
                terms.append(term)

        groups = {}

        for term in terms:
            groups.setdefault(_TileAxes(self).of(term), []).append(term)

        rank = max(map(len, groups))
        # Right-aligned, as broadcasting aligns shapes: (M,) is (1, M).
        by_axes = {}

        for axes, members in groups.items():
            padded = (False,) * (rank - len(axes)) + axes
            by_axes.setdefault(padded, []).extend(members)

        # Terms without a name are Python bools when the frontend traces
        # them (``0 < 1``), and Triton 3.2 fails on ``bool & tensor`` (see
        # FoldTrueMask): they go last, where they are a tensor's operand.
        constants = [term for term in terms if not _names(term)]
        groups = [
            group
            for axes in sorted(by_axes, key=lambda axes: sum(axes))
            if (group := [term for term in by_axes[axes] if _names(term)])
        ]
        groups = self._tensor_first(groups)
        grouped = _and([_and(group) for group in (*groups, constants) if group])

        # An unchanged mask has the same term objects under the same ``&``
        # nodes: :func:`same` compares only where the objects differ.
        if same(grouped, mask):
            return mask

        self.rewrote()

        return ast.copy_location(grouped, mask)

    def _tensor_first(self, groups):
        # The groups, the first of them led by a term that is a tensor in
        # every launch, where one is: only scalar terms may not be one (a
        # term along a tile axis holds an ``arange``).
        if self._tensors is None:
            self._tensors = TracedTensors(self._scope, self.aliases)

        tensors = self._tensors
        first = groups[0] if groups else []
        lead = next((term for term in first if tensors.holds(term)), None)

        if lead is not None:
            return [[lead, *(term for term in first if term is not lead)], *groups[1:]]

        if len(groups) > 1:
            row, *rest = groups[1]

            return [[row, *first, *rest], *groups[2:]]

        return groups


def _names(node):
    return any(isinstance(child, ast.Name) for child in walk(node))


def _conjuncts(node):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
        return _conjuncts(node.left) + _conjuncts(node.right)

    return [node]


def _and(operands):
    result = operands[0]

    for operand in operands[1:]:
        result = ast.BinOp(left=result, op=ast.BitAnd(), right=operand)

    return result


class _TileAxes:
    """The axes along which an expression varies, right-aligned: ``arange(0, M)[:, None]`` is ``(True, False)``."""

    def __init__(self, owner):
        self._owner = owner

    def of(self, node):
        if self._owner.is_call_to(node, "triton.language.arange"):
            return (True,)

        if isinstance(node, ast.Subscript):
            return self._subscript(node)

        axes = ()

        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                axes = _broadcast(axes, self.of(child))

        return axes

    def _subscript(self, node):
        value = list(self.of(node.value))
        indices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        axes = []

        for index in indices:
            if isinstance(index, ast.Constant) and index.value is None:
                axes.append(False)
            elif value:
                axis = value.pop(0)

                if isinstance(index, ast.Slice):
                    axes.append(axis)

        return tuple(axes + value)


def _broadcast(first, second):
    if len(first) < len(second):
        first, second = second, first

    offset = len(first) - len(second)

    return first[:offset] + tuple(a or b for a, b in zip(first[offset:], second))
