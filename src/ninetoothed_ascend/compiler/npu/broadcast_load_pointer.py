"""Give a masked load's pointer block the shape of its mask where the mask is larger."""

import ast

from ninetoothed_ascend.compiler.passes import Pass, tile_names
from ninetoothed_ascend.compiler.syntax import (
    clone,
    find,
    insert_after_imports,
    keyword,
    walk,
)

#: Prefix of the module-level ``triton.jit`` functions that load a pointer block under a larger mask.
LOAD = "ninetoothed_ascend_load_under_mask"


def _load_source(axes):
    reductions = "".join(
        f"    mask_of_pointer = triton.language.max(mask_of_pointer.to(triton.language.int8), axis={axis}, keep_dims=True) != 0\n"
        for axis in axes
    )

    return f"""
@triton.jit
def {_load_name(axes)}(pointer, mask, other):
    mask_of_pointer = mask
{reductions}    return triton.language.where(mask, triton.language.load(pointer, mask=mask_of_pointer, other=other), other)
"""


def _load_name(axes):
    return "_".join((LOAD, *map(str, axes)))


#: The helper that loads under the terms of the mask on the pointer's own axes.
LOAD_SPLIT = f"{LOAD}_of_pointer"

LOAD_SPLIT_SOURCE = f"""
@triton.jit
def {LOAD_SPLIT}(pointer, mask_of_pointer, mask, other):
    return triton.language.where(mask, triton.language.load(pointer, mask=mask_of_pointer, other=other), other)
"""


class BroadcastLoadPointer(Pass):
    """Rewrite ``load(p, mask=m, other=o)`` into a load of ``p`` and ``m`` broadcast together, where ``m`` spans an axis ``p`` does not.

    Constraint: Triton 3.9's ``load`` broadcasts pointer and mask together;
    Triton 3.2's (triton-ascend 3.2.0, ``semantic.load``) broadcasts only the
    mask to the pointer's shape, so a mask larger than its pointer block fails
    the frontend. NineToothed writes such loads for a tile expanded inside the
    program (``tile.dtype = tile.dtype.unsqueeze(0).expand((BLOCK_SIZE_M,
    -1))``): the expanded axis has no offsets in the pointer but terms in the
    mask. Measured: ``examples/vision/conv2d_bias.py`` (a bias tile expanded
    to the output tile, the way ntops' conv2d reads its bias) through
    the Ascend compile check (``compile_check.check_variant``, stage
    ``ttir``) without this pass fails with
    ``Cannot broadcast, the expanded size of the tensor (1) must match the
    existing size (32) at non-singleton dimension 0: [32, 32], [1, 32]``
    (``tests/check/test_compile_check.py::test_mask_larger_than_pointer_fails_without_broadcast_load_pointer``);
    the same message ntops' conv2d with a bias hits.

    Where: the axes of a block are read from its ``arange(...)[None, :]``
    subscripts (a slice marks the axis the ``arange`` spans). A load is
    rewritten when its mask spans an axis its pointer does not.

    The load becomes a call of a module-level ``triton.jit`` function that
    loads the pointer block under the mask reduced (any lane true) over the
    axes the pointer lacks, then broadcasts the block to the mask's shape
    with ``where(mask, block, other)``: the block Triton 3.9 loads, without a
    zero-stride pointer (``tl.broadcast`` of the pointer instead clears
    ``ttir`` but crashes ``triton-adapter-opt``: "strides must not be zero",
    measured the same way). A load whose pointer uses a name bound to a
    block (an assignment with an ``arange`` or a ``load``) is left alone:
    its axes are not read from the source, and a wrong guess could load
    lanes outside the mask.

    :Constraint: Triton 3.2's `load` (triton-ascend 3.2.0) broadcasts only the
        mask to the pointer's shape, so a mask spanning an axis the pointer
        block lacks fails the frontend ("Cannot broadcast ..."); `tl.broadcast`
        of the pointer crashes `triton-adapter-opt` ("strides must not be
        zero")
    :Source: measured:
        `tests/check/test_compile_check.py::test_mask_larger_than_pointer_fails_without_broadcast_load_pointer`
    :Rewrites: the load becomes a `triton.jit` helper that loads under the mask
        reduced over the missing axes, then `where(mask, block, other)`
    """

    # Its helper reduces the mask with ``max``.
    INTRODUCES = ("triton.language.max",)

    def run(self, tree, module=None):
        self._helpers = set()
        self._block_names = set()

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        self._block_names = tile_names(self, node)
        self.generic_visit(node)

        return node

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self.is_call_to(node, "triton.language.load") or len(node.args) != 1:
            return node

        pointer = node.args[0]
        mask = keyword(node, "mask")
        other = keyword(node, "other")

        if (
            mask is None
            or {item.arg for item in node.keywords} - {"mask", "other"}
            or any(
                isinstance(name, ast.Name) and name.id in self._block_names
                for name in walk(pointer)
            )
        ):
            return node

        missing = self._axes(mask.value) - self._axes(pointer)

        if not missing:
            return node

        self.rewrote()
        other_value = other.value if other is not None else ast.Constant(0)
        own = self._terms_of_pointer(mask.value, missing)

        if own is not None:
            self._helpers.add(None)

            return ast.copy_location(
                ast.Call(
                    ast.Name(LOAD_SPLIT, ast.Load()),
                    [pointer, own, clone(mask.value), other_value],
                    [],
                ),
                node,
            )

        axes = tuple(sorted(axis for axis, _ in missing))
        self._helpers.add(axes)

        return ast.copy_location(
            ast.Call(
                ast.Name(_load_name(axes), ast.Load()),
                [pointer, mask.value, other_value],
                [],
            ),
            node,
        )

    def _terms_of_pointer(self, mask, missing):
        """The ``&`` tree of ``mask`` without its terms on ``missing`` axes, or ``None`` (a term on both kinds, or none on the pointer's)."""

        spanning = []

        def prune(node):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
                left, right = prune(node.left), prune(node.right)

                if left is _MIXED or right is _MIXED:
                    return _MIXED

                if left is None or right is None:
                    return left if right is None else right

                return ast.BinOp(left, ast.BitAnd(), right)

            axes = self._axes(node)

            if not axes & missing:
                if axes:
                    spanning.append(node)

                return clone(node)

            return None if axes <= missing else _MIXED

        kept = prune(mask)

        return None if kept is None or kept is _MIXED or not spanning else kept

    def finish(self, tree):
        for axes in sorted(self._helpers, key=lambda axes: axes or ()):
            insert_after_imports(
                tree,
                ast.parse(
                    LOAD_SPLIT_SOURCE if axes is None else _load_source(axes)
                ).body,
            )

    def _axes(self, expression):
        """The axes spanned by the subscripted ``arange`` blocks in ``expression``: ``set`` of ``(axis, rank)``."""

        axes = set()

        for node in find(expression, ast.Subscript):
            if not (
                self.is_call_to(node.value, "triton.language.arange")
                and isinstance(node.slice, ast.Tuple)
            ):
                continue

            rank = len(node.slice.elts)
            axes |= {
                (axis, rank)
                for axis, item in enumerate(node.slice.elts)
                if isinstance(item, ast.Slice)
            }

        return axes


#: A term of a mask that spans axes the pointer has and axes it lacks.
_MIXED = object()
