"""Build a masked load's fill value in fp64 where the load reads an fp64 tensor."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import insert_after_imports, keyword

#: The module-level ``triton.jit`` function that loads with a fill value of
#: the pointer's element type. It takes ``triton.language.load``'s first three
#: parameters, in its order: the UB model costs a call of it as that load.
LOAD = "ninetoothed_ascend_load_filled"

_LOAD_SOURCE = f"""
@triton.jit
def {LOAD}(pointer, mask, other):
    if pointer.dtype.element_ty == triton.language.float64:
        loaded = triton.language.load(pointer, mask=mask, other=triton.language.full((), other, triton.language.float64))
    else:
        loaded = triton.language.load(pointer, mask=mask, other=other)
    return loaded
"""


class BuildFloat64Fill(Pass):
    """Rewrite ``load(p, mask=m, other=c)``, ``c`` a number, into a load whose fill value is built in fp64 where ``p`` points to fp64.

    Constraint: triton-ascend 3.2's ``load`` turns ``other`` into a tensor
    (an int32 for ``0``, an fp32 for ``float('-inf')``) and casts it to the
    pointer's element type, and its ``cast`` refuses every cast to fp64
    ("[fp8, fp64] is unsupported on Ascend for now. Source scalar type is
    int32 and destination type is fp64"); a masked load with ``other=None``
    fails the same way. So every masked load of an fp64 tensor fails the
    frontend, and NineToothed masks every load. ``triton.language.full((),
    c, float64)`` makes the constant in fp64 without a cast, which the
    frontend and ``triton-adapter-opt`` accept (the load stays an affine
    ``memref.reinterpret_cast`` copy).

    The load moves into ``ninetoothed_ascend_load_filled(p, m, c)``, a
    ``triton.jit`` function whose ``if`` on the pointer's element type the
    frontend folds (an ``else``, not a second ``return``: the frontend
    traces the statements after a folded ``if`` that returns, and the
    other load would be cast): ``c`` arrives as a constexpr (Triton makes every
    Python constant passed to a ``triton.jit`` function one), and loads of
    other element types are the load the kernel wrote. It runs after every
    pass that matches loads, which see ``triton.language.load`` as written.

    Only fills that are numbers (``0``, ``-1.5``, ``float('-inf')``) are
    built: a fill computed in the kernel is a tensor, whose cast to fp64
    the frontend refuses however it is written.

    :Constraint: a masked load's fill value is cast to the pointer's element
        type, and triton-ascend 3.2's `cast` refuses every cast to fp64
    :Source: triton-ascend `triton_patch/language/semantic.py` (`load`,
        `cast`); `tests/compiler/npu/test_build_float64_fill.py`
    :Rewrites: `load(p, mask=m, other=c)`, `c` a number, becomes
        `ninetoothed_ascend_load_filled(p, m, c)`, which builds `c` with
        `full((), c, float64)` where `p` points to fp64
    """

    def run(self, tree, module=None):
        self._loaded = False
        self._in_kernel = False

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        if self.module.is_kernel(node):
            self._in_kernel = True
            self.generic_visit(node)
            self._in_kernel = False

        return node

    def visit_Call(self, node):
        self.generic_visit(node)

        if not (self._in_kernel and self.is_call_to(node, "triton.language.load")):
            return node

        mask = keyword(node, "mask")
        other = keyword(node, "other")

        if (
            len(node.args) != 1
            or len(node.keywords) != 2
            or mask is None
            or other is None
            or not _is_number(other.value)
        ):
            return node

        self._loaded = True
        self.rewrote()

        return ast.copy_location(
            ast.Call(
                ast.Name(LOAD, ast.Load()),
                [node.args[0], mask.value, other.value],
                [],
            ),
            node,
        )

    def finish(self, tree):
        if self._loaded:
            insert_after_imports(tree, ast.parse(_LOAD_SOURCE).body)


def _is_number(node):
    # ``0``, ``-1.5``, ``float('-inf')``: what NineToothed writes for a
    # tensor's ``other`` and ``FillMaskedLoads`` for none.
    if node.__class__ is ast.UnaryOp and node.op.__class__ in (ast.USub, ast.UAdd):
        node = node.operand

    if node.__class__ is ast.Constant:
        return node.value.__class__ in (int, float)

    return (
        node.__class__ is ast.Call
        and node.func.__class__ is ast.Name
        and node.func.id == "float"
        and len(node.args) == 1
        and not node.keywords
        and node.args[0].__class__ is ast.Constant
        and node.args[0].value.__class__ is str
    )
