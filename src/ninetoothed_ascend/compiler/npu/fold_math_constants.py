"""Fold calls of Python's ``math`` on constants into the constant."""

import ast
import math
import numbers

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import walk

_OPERATORS = (
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.USub,
    ast.UAdd,
)


class FoldMathConstants(Pass):
    """Replace expressions of numbers, ``math`` constants and ``math`` functions by their value.

    Constraint: NineToothed 0.26 keeps an application's ``math`` calls in
    the kernel (``math.sqrt(2 / math.pi)`` in a tanh GELU). Triton 3.2's
    frontend (triton-ascend 3.2) turns the global float ``math.pi`` into a
    ``constexpr`` and then cannot pass it to ``math.sqrt``: "TypeError:
    __index__ returned non-int (type float)" (reproduced by
    ``tests/compiler/npu/test_import_standard_modules.py::test_npu_variant_of_gelu_with_math_and_libdevice_passes_the_compile_check``
    without this pass).

    A maximal subexpression built only from int and float literals, the
    arithmetic operators, float constants of ``math`` (``pi``, ``e``,
    ``tau``, ``inf``, ``nan``) and calls of ``math`` functions, holding at
    least one ``math`` reference, is evaluated here, in Python's double
    precision as the frontend would, and becomes a literal. ``math`` is
    matched through the module's imports, not by its name.

    :Constraint: Triton 3.2's frontend makes `math.pi` a constexpr and
        `math.sqrt` of it raises "`__index__` returned non-int (type float)"
    :Source: reproduced: `tests/compiler/npu/test_import_standard_modules.py`
        (compile check with the import, without the fold)
    :Rewrites: each maximal expression of numbers, `math` constants and `math`
        calls becomes its value (Python double, as the frontend computes)
    """

    TRIGGERS = ("math",)

    def generic_visit(self, node):
        # Fold the largest constant subtree: try the node before its children.
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                setattr(node, field, [self._fold(item) for item in value])
            elif isinstance(value, ast.expr):
                setattr(node, field, self._fold(value))
            elif isinstance(value, ast.AST):
                self.visit(value)

        return node

    def _fold(self, node):
        if isinstance(node, ast.expr):
            if not self._mentions_math(node):
                # Nor does any part of it: nothing below folds. Not walking
                # each part again keeps the pass linear in the module's size.
                return node

            try:
                value = self._evaluate(node)
            except _NotConstant:
                pass
            else:
                if isinstance(value, numbers.Real) and not isinstance(value, bool):
                    self.rewrote()

                    return ast.copy_location(_literal(value), node)

        if isinstance(node, ast.AST):
            return self.visit(node)

        return node

    def _mentions_math(self, node):
        return any(
            isinstance(child, ast.Attribute)
            and (self.resolve(child) or "").startswith("math.")
            for child in walk(node)
        )

    def _evaluate(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value

        if isinstance(node, ast.Attribute):
            value = self._math_attribute(node)

            if isinstance(value, float):
                return value

        if isinstance(node, ast.UnaryOp) and isinstance(node.op, _OPERATORS):
            operand = self._evaluate(node.operand)

            return -operand if isinstance(node.op, ast.USub) else +operand

        if isinstance(node, ast.BinOp) and isinstance(node.op, _OPERATORS):
            expression = ast.Expression(
                ast.BinOp(
                    ast.Constant(self._evaluate(node.left)),
                    node.op,
                    ast.Constant(self._evaluate(node.right)),
                )
            )

            return eval(compile(ast.fix_missing_locations(expression), "", "eval"))

        if isinstance(node, ast.Call) and not node.keywords:
            function = self._math_attribute(node.func)

            if callable(function):
                return function(*(self._evaluate(argument) for argument in node.args))

        raise _NotConstant

    def _math_attribute(self, node):
        name = self.resolve(node) if isinstance(node, ast.Attribute) else None

        if name is None or not name.startswith("math.") or name.count(".") != 1:
            return None

        return getattr(math, name.removeprefix("math."), None)


class _NotConstant(Exception):
    pass


def _literal(value):
    if isinstance(value, float) and not math.isfinite(value):
        return ast.parse(f"float({str(value)!r})", mode="eval").body

    if value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))

    return ast.Constant(value)
