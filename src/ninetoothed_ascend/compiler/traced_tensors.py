"""Which expressions of a kernel Triton's frontend traces as tensors in every launch.

Triton's frontend traces a kernel's Python with each value either a tensor
(``triton.language.tensor``: an IR value) or a constexpr (a Python value
folded at compile time). Operators on a tensor give tensors; on constexprs,
constexprs. Which one an expression is may depend on the launch: Triton 3.2's
JIT (triton-ascend 3.2.0, ``JITFunction.run``) specializes an integer
argument equal to 1 to a constant, so an expression of integer parameters
(a size that is 1 in this launch, 37 in the next) is a constexpr in some
launches and a tensor in others. Passes that must put a tensor where the
frontend needs one (the left operand of ``&``, the receiver of a method)
ask :class:`TracedTensors` for the expressions that are tensors in every
launch.
"""

import ast

from ninetoothed_ascend.compiler.syntax import resolve, walk

#: Calls whose result is a tensor whatever their arguments.
TENSOR_SOURCES = frozenset(
    {
        "triton.language.program_id",
        "triton.language.num_programs",
        "triton.language.arange",
        "triton.language.load",
    }
)

#: Loops whose index the frontend makes a tensor (an ``scf.for`` induction
#: variable, Triton 3.2 ``CodeGenerator.visit_For``); ``static_range``
#: unrolls with constexpr indices.
TENSOR_LOOPS = frozenset({"range", "triton.language.range"})

# A binding to a tensor that is no expression of the kernel (a loop's index).
_TENSOR = object()


class TracedTensors:
    """The expressions of ``scope`` that are tensors when the frontend traces them, in every launch.

    A name is one where every binding of it in ``scope`` is: an assignment
    of such an expression, or the index of a ``range`` loop; a parameter
    never is (the launch may specialize it to a constant). An expression is
    one where it calls a tensor source (:data:`TENSOR_SOURCES`), or computes
    on one (an operator, a comparison, a subscript, a ``triton.language``
    function of one, a method of one), or is such a name. Anything else may
    be a constexpr in some launch (a literal, a constexpr, an integer
    parameter, ``x.shape[0]``, a name bound to one of them anywhere).

    :param scope: ``ast.FunctionDef`` (a kernel), or ``ast.Module`` (its
        top-level assignments, for code outside any function).
    :param aliases: ``dict`` from :func:`~ninetoothed_ascend.compiler.syntax.import_aliases`
        of the module, to resolve ``tl.load`` and the like.
    """

    def __init__(self, scope, aliases):
        self._aliases = aliases
        bindings = {}

        if isinstance(scope, ast.FunctionDef):
            arguments = scope.args

            for argument in (
                *arguments.posonlyargs,
                *arguments.args,
                *arguments.kwonlyargs,
            ):
                bindings.setdefault(argument.arg, []).append(None)

        for node in walk(scope):
            for target, value in self._bindings(node):
                bindings.setdefault(target, []).append(value)

        # The greatest fixed point: every name bound only by expressions
        # starts in, and leaves once one of its bindings is no tensor given
        # the names left (``x = x * 2`` stays where x's other bindings are
        # tensors). A name read before any binding of it has run fails the
        # frontend, so in a kernel it traces, each name left was first bound
        # by a tensor.
        self.names = {
            name
            for name, values in bindings.items()
            if all(value is not None for value in values)
        }
        changed = True

        while changed:
            changed = False

            for name in list(self.names):
                if not all(
                    value is _TENSOR or self.holds(value) for value in bindings[name]
                ):
                    self.names.discard(name)
                    changed = True

    def holds(self, node):
        """Whether ``node`` (an expression of the scope) is a tensor when traced, in every launch (``bool``)."""

        if isinstance(node, ast.Name):
            return node.id in self.names

        if isinstance(node, ast.Call):
            function = resolve(node.func, self._aliases) or ""

            if function in TENSOR_SOURCES:
                return True

            if isinstance(node.func, ast.Attribute) and self.holds(node.func.value):
                return True

            return function.startswith("triton.language.") and any(
                self.holds(argument) for argument in node.args
            )

        if isinstance(node, ast.BinOp):
            return self.holds(node.left) or self.holds(node.right)

        if isinstance(node, ast.Compare):
            return any(map(self.holds, (node.left, *node.comparators)))

        if isinstance(node, ast.UnaryOp):
            return self.holds(node.operand)

        if isinstance(node, ast.Subscript):
            return self.holds(node.value)

        if isinstance(node, ast.IfExp):
            return self.holds(node.body) and self.holds(node.orelse)

        return False

    def _bindings(self, node):
        # ``(name, value)`` for each name ``node`` binds; the value is what
        # the name then holds: an expression, _TENSOR (a ``range`` loop's
        # index), or ``None`` where no expression says (an unpacked tuple,
        # a ``with``, another loop's index).
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield from _bound(target, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
            if node.value is not None:
                yield from _bound(node.target, node.value)
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name):
                current = ast.Name(node.target.id, ast.Load())
                yield node.target.id, ast.BinOp(current, node.op, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            loop = (
                resolve(node.iter.func, self._aliases)
                if isinstance(node.iter, ast.Call)
                else None
            )
            yield from _bound(node.target, _TENSOR if loop in TENSOR_LOOPS else None)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    yield from _bound(item.optional_vars, None)
        elif isinstance(node, ast.comprehension):
            yield from _bound(node.target, None)


def _bound(target, value):
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound(element, None)
