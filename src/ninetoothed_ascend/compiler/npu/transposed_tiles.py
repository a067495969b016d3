"""Load a tile whose rows are contiguous and whose columns are strided transposed, then transpose it in the UB."""

import ast

from ninetoothed_ascend.compiler.generated import launch_arguments
from ninetoothed_ascend.compiler.npu.flat_access import COLLAPSES
from ninetoothed_ascend.compiler.passes import (
    Pass,
    arange_positions,
    clone,
    keyword,
    summands,
)

#: Prefix of the constexpr parameter that selects the transposed load.
FLAG_PREFIX = "ninetoothed_ascend_transposed_"


class TransposeStridedTiles(Pass):
    """Give a 2-D load with unit-stride rows and strided columns a transposed DMA, decided at the launch.

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
    <its digits>`` (``FLAG`` a constexpr the launch sets through
    ``ninetoothed_ascend_collapses``) varying along the tile's outer axis,
    and one column term ``C * s`` varying along the innermost axis, ``s`` a
    stride parameter; every ``arange`` in the address and mask indexed 2-D
    and every other name a scalar. Rewrite::

        tl.trans(tl.load(<address and mask on FLAG's path, axes swapped>)) if T else <the load>

    ``T`` a new constexpr the launch sets to ``FLAG and t == 1 and s != 1``:
    a launch whose columns step 1 keeps the plain load, a strided one whose
    rows do not collapse keeps the gather, and both paths load the same
    elements (swapping every ``[:, None]`` and ``[None, :]`` of an address
    and its mask addresses the transposed tile).
    """

    def run(self, tree, module=None):
        self._count = 0

        return super().run(tree, module)

    def visit_Module(self, node):
        for kernel, launch_call in self.module.launches():
            flags = {
                item.arg: item.value
                for item in launch_call.keywords
                if _is_collapse_test(item.value)
            }
            arguments = launch_arguments(kernel, launch_call)
            tiles = _tile_names(self, kernel)
            rewriter = _Rewriter(self, kernel, launch_call, flags, arguments, tiles)
            rewriter.visit(kernel)

        return node

    def new_flag(self):
        name = f"{FLAG_PREFIX}{self._count}"
        self._count += 1

        return name


class _Rewriter(ast.NodeTransformer):
    def __init__(self, owner, kernel, launch_call, flags, arguments, tiles):
        self.owner = owner
        self.kernel = kernel
        self.launch_call = launch_call
        self.flags = flags
        self.arguments = arguments
        self.tiles = tiles

    def visit_Call(self, node):
        self.generic_visit(node)

        if not (self.owner.is_call_to(node, "triton.language.load") and node.args):
            return node

        match = self.match(node)

        if match is None:
            return node

        flag, unit_stride, column_stride = match
        name = self.owner.new_flag()
        self.kernel.args.args.append(
            ast.arg(name, ast.parse("triton.language.constexpr").body)
        )
        test = ast.BoolOp(
            ast.And(),
            [
                clone(self.flags[flag]),
                ast.Compare(clone(unit_stride), [ast.Eq()], [ast.Constant(1)]),
                ast.Compare(clone(column_stride), [ast.NotEq()], [ast.Constant(1)]),
            ],
        )
        self.launch_call.keywords.append(ast.keyword(name, test))
        transposed = SwapAxes().visit(on_path(clone(node), flag))
        self.owner.rewrote()

        return ast.IfExp(
            ast.Name(name, ast.Load()),
            ast.Call(
                ast.Attribute(clone(node.func.value), "trans", ast.Load())
                if isinstance(node.func, ast.Attribute)
                else ast.parse("triton.language.trans").body[0].value,
                [transposed],
                [],
            ),
            node,
        )

    def match(self, load):
        """``(FLAG, the launch's t, the launch's s)`` for a load of the matched form, else ``None``."""

        pointer = load.args[0]
        mask = keyword(load, "mask")
        other = keyword(load, "other")

        if len(load.args) > 1 or (
            other is not None and not isinstance(other.value, ast.Constant)
        ):
            return None

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

        unit = [
            term
            for term in summands(row.body)
            if arange_positions(self.owner, term)
            and isinstance(term, ast.BinOp)
            and isinstance(term.op, ast.Mult)
            and isinstance(term.right, ast.Name)
            and term.right.id in self.arguments
        ]

        if len(unit) != 1:
            return None

        scope = [pointer] + ([mask.value] if mask is not None else [])

        if not all(self.two_dimensional(node) for node in scope) or any(
            isinstance(name, ast.Name) and name.id in self.tiles
            for node in scope
            for name in ast.walk(node)
        ):
            return None

        return (
            row.test.id,
            self.arguments[unit[0].right.id],
            self.arguments[column.right.id],
        )

    def two_dimensional(self, node):
        for inner in ast.walk(node):
            if self.owner.is_call_to(inner, "triton.language.arange"):
                break
        else:
            return True

        subscripted = {
            id(inner.value)
            for inner in ast.walk(node)
            if isinstance(inner, ast.Subscript)
            and isinstance(inner.slice, ast.Tuple)
            and len(inner.slice.elts) == 2
        }

        return all(
            id(inner) in subscripted
            for inner in ast.walk(node)
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


def _is_collapse_test(value):
    """Whether a launch keyword's value is ``ninetoothed_ascend_collapses(...)``, alone or ``and``-ed with stride tests."""

    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And):
        value = value.values[0]

    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == COLLAPSES
    )


def _tile_names(owner, kernel):
    """Names the kernel assigns from an expression that holds ``arange`` or a load: tiles, not scalars."""

    names = set()

    for node in ast.walk(kernel):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            value = node.value

            if value is not None and any(
                owner.is_call_to(
                    inner, "triton.language.arange", "triton.language.load"
                )
                for inner in ast.walk(value)
            ):
                targets = (
                    node.targets if isinstance(node, ast.Assign) else [node.target]
                )
                names.update(
                    name.id
                    for target in targets
                    for name in ast.walk(target)
                    if isinstance(name, ast.Name)
                )

    return names
