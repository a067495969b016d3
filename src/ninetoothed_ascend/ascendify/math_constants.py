"""Fold calls to the ``math`` module on constants into float literals."""

import ast
import math

from ninetoothed_ascend.ascendify.base import Pass

# No ``**``: an integer power of integer literals can take unbounded time to
# evaluate; ``math.pow`` is folded instead.
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


class FoldMathConstants(Pass):
    """Replace each constant expression that uses the ``math`` module (``math.sqrt(2 / math.pi)``) by its value.

    Constraint: Triton 3.2's frontend, the one triton-ascend 3.2.0 ships,
    calls a plain Python function from a kernel with its arguments still
    wrapped in ``constexpr``: only ``len``, ``list``, ``range``, ``float``,
    ``int``, ``isinstance``, ``getattr``, ``print``, ``min`` and ``max`` get
    them unwrapped (``triton/compiler/code_generator.py``, ``visit_Call``:
    ``if fn in self.builtin_namespace.values(): args = map(_unwrap_if_constexpr,
    args)``). ``math.sqrt(2 / math.pi)``, which NineToothed inlines from a
    tanh GELU's application, then fails in the ``ttir`` stage with
    ``TypeError('__index__ returned non-int (type float)')``, even where the
    module imports ``math``. Triton 3.9 unwraps the arguments of any function
    bound to a non-Triton ``__self__`` (code_generator.py ``visit_Call``), so
    the CUDA source compiles there. Reproducer:
    ``tests/reproducers/constexpr_math_call.py``; measured in
    ``tests/test_ascendify_math_constants.py``.

    An expression is folded when it is built only from ``int`` and ``float``
    literals, ``math`` constants (``math.pi``), calls to ``math`` functions
    without keywords, unary ``+``/``-`` and ``+ - * /``, and it contains at least
    one ``math`` reference; the largest such expression is replaced by the
    ``float`` (or ``int``) it evaluates to, written exactly (``repr`` round
    trips). ``math`` must resolve to the standard module: unbound (as
    NineToothed leaves it) or bound by ``import math``; a module that binds
    the name any other way is left alone. Expressions whose value is not
    finite, or whose evaluation raises (``math.sqrt(-1)``), are left as they
    are.
    """

    def run(self, tree):
        self._math_names = _names_of_math(tree)

        return super().run(tree)

    def visit(self, node):
        if (
            isinstance(node, ast.expr)
            and self._is_constant(node)
            and self._uses_math(node)
        ):
            value = self._evaluate(node)

            if value is not None:
                self.rewrote()

                return ast.copy_location(_literal(value), node)

        return super().visit(node)

    def _is_math(self, node):
        return isinstance(node, ast.Name) and node.id in self._math_names

    def _is_constant(self, node):
        if isinstance(node, ast.Constant):
            return type(node.value) in (int, float)

        if isinstance(node, ast.Attribute):
            return self._is_math(node.value) and isinstance(
                getattr(math, node.attr, None), (int, float)
            )

        if isinstance(node, ast.Call):
            return (
                isinstance(node.func, ast.Attribute)
                and self._is_math(node.func.value)
                and callable(getattr(math, node.func.attr, None))
                and not node.keywords
                and all(self._is_constant(argument) for argument in node.args)
            )

        if isinstance(node, ast.BinOp):
            return (
                isinstance(node.op, _OPERATORS)
                and self._is_constant(node.left)
                and self._is_constant(node.right)
            )

        if isinstance(node, ast.UnaryOp):
            return isinstance(node.op, (ast.UAdd, ast.USub)) and self._is_constant(
                node.operand
            )

        return False

    def _uses_math(self, node):
        return any(self._is_math(child) for child in ast.walk(node))

    def _evaluate(self, node):
        expression = ast.fix_missing_locations(ast.Expression(body=node))
        namespace = {name: math for name in self._math_names}

        try:
            value = eval(  # noqa: S307 (only literals, math and arithmetic, checked above)
                compile(expression, "<math constant>", "eval"),
                {"__builtins__": {}, **namespace},
            )
        except (ArithmeticError, ValueError):
            return None

        if isinstance(value, float) and not math.isfinite(value):
            return None

        return value


def _names_of_math(tree):
    """The names that stand for the ``math`` module in ``tree``: ``set`` of ``str``."""

    imported = set()
    bound_otherwise = set()

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]

                if alias.name == "math":
                    imported.add(name)
                else:
                    bound_otherwise.add(name)
        elif isinstance(node, ast.ImportFrom):
            bound_otherwise.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound_otherwise.add(node.id)
        elif isinstance(node, ast.arg):
            bound_otherwise.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound_otherwise.add(node.name)

    return (imported | {"math"}) - bound_otherwise


def _literal(value):
    if value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(-value))

    return ast.Constant(value)
