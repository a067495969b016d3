"""Use Ascend's hf32 where a kernel asks for tf32, and only where its operands are fp32."""

import ast

from ninetoothed_ascend.compiler.passes import Pass, RewriteError
from ninetoothed_ascend.compiler.syntax import keyword, walk

#: Position of ``input_precision`` in ``tl.dot(input, other, acc, input_precision, ...)``.
_INPUT_PRECISION_POSITION = 3

#: Prefix of the names the operands are bound to before the ``dot``.
OPERAND_PREFIX = "ninetoothed_ascend_dot_operand_"


class UseHf32InDot(Pass):
    """Rewrite ``dot``'s tf32 modes for Ascend, by the operands' dtype, folded at compile time.

    Constraint: tf32 does not exist on Ascend; triton-ascend 3.2 allows only
    ``input_precision`` "ieee" and "hf32" (``allowed_dot_input_precisions``
    in backends/ascend/compiler.py), asserts "please use
    input_precision='hf32' on Ascend" on "tf32", "tf32x3" and
    ``allow_tf32=True`` (triton_patch/language/core.py; measured on ntops mm,
    bmm, conv2d, docs/ascend.md), and raises "input_precision = 'hf32'
    must be used with f32 * f32 = f32 on Ascend" for any other operand or
    result dtype (triton_patch/language/semantic.py, ``dot``). CUDA's tf32
    applies to fp32 operands only and is ignored for fp16 ones, so one
    NineToothed kernel serves both; its Ascend form must decide by dtype.

    - ``input_precision="tf32"`` and ``allow_tf32=True`` become
      ``input_precision="hf32" if <both operands and the result are fp32>
      else "ieee"`` (nested conditionals); the condition compares dtypes, which are compile-time
      constants, so the frontend folds it (the compile check shows it for
      fp16 and fp32 operands). Operands that are not plain names are first
      bound to names in statements before the one holding the ``dot``, so
      the condition does not evaluate (load) them twice.
    - ``input_precision="tf32x3"`` (tf32 in three passes, for fp32
      accuracy) becomes ``"ieee"``: hf32 would lose the accuracy the kernel
      asked for.
    - ``allow_tf32=False`` is dropped ("ieee" is triton-ascend's default).
    - ``input_precision=<name>``, where every assignment to the name in the
      kernel binds a string literal (``input_precision_: tl.constexpr =
      "tf32"`` in one branch of an ``if``, ``"ieee"`` in the other, as
      operator libraries choose the mode), and one of those literals is a
      tf32 mode: the argument becomes ``(<the tf32 form above> if name ==
      "tf32" else "ieee" if name == "tf32x3" else name)``, which the
      frontend folds, the name being a constexpr. Found by the kernel's
      assignments, not by names: a name also bound to anything else (a
      parameter, an expression) is left alone.

    :Constraint: triton-ascend allows `input_precision` "ieee" and "hf32" only,
        asserts on "tf32"/"tf32x3"/`allow_tf32=True`, and accepts "hf32" only
        for fp32 × fp32 = fp32 ("input_precision = 'hf32' must be used with f32
        * f32 = f32 on Ascend")
    :Source: triton-ascend 3.2 `triton_patch/language/core.py`, `semantic.py`
        (`dot`), `backends/ascend/compiler.py`;
        `tests/compiler/npu/test_use_hf32_in_dot.py`
    :Rewrites: "tf32" and `allow_tf32=True` become `"hf32" if` both operands
        (and `out_dtype`) are fp32 `else "ieee"`, nested conditionals the
        frontend folds, operands bound to names first; "tf32x3" becomes "ieee"
        (fp32 accuracy, its intent); a precision held in a name that the kernel
        binds only to string literals, one a tf32 mode (`p: constexpr = "tf32"`
        / `"ieee"` in the branches of an `if`), gets `(<the above> if p ==
        "tf32" else "ieee" if p == "tf32x3" else p)`
    """

    TRIGGERS = ("triton.language.dot",)

    def run(self, tree, module=None):
        self._count = 0
        self._function = None
        self._hoisted = None

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        enclosing = self._function
        self._function = node
        self._visit_statement_lists(node)
        self._function = enclosing

        return node

    def _visit_statement_lists(self, node):
        # A node that holds statements: its statement lists are walked here,
        # so that a dot's operands can be hoisted into statements before the
        # one holding it; the rest of the module is walked as every pass
        # walks it, which skips the nodes the pass has nothing to do in.
        for field in _STATEMENT_FIELDS:
            statements = getattr(node, field, None)

            if statements.__class__ is not list or not all(
                isinstance(statement, ast.stmt) for statement in statements
            ):
                continue

            rewritten = []
            enclosing = self._hoisted

            for statement in statements:
                self._hoisted = []
                statement = self.visit(statement)
                rewritten.extend(self._hoisted)
                rewritten.append(statement)

            self._hoisted = enclosing
            setattr(node, field, rewritten)

        for field in node._fields:
            value = getattr(node, field, None)

            if field in _STATEMENT_FIELDS and value.__class__ is list:
                continue

            if value.__class__ is list:
                setattr(
                    node,
                    field,
                    [
                        self.visit(item) if isinstance(item, ast.AST) else item
                        for item in value
                    ],
                )
            elif isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))

        return node

    visit_Module = visit_AsyncFunctionDef = visit_ClassDef = _visit_statement_lists
    visit_For = visit_AsyncFor = visit_While = visit_If = _visit_statement_lists
    visit_With = visit_AsyncWith = visit_Try = visit_TryStar = _visit_statement_lists
    visit_ExceptHandler = visit_match_case = _visit_statement_lists

    def visit_Call(self, node):
        self.generic_visit(node)

        if not self.is_call_to(node, "triton.language.dot"):
            return node

        precision = keyword(node, "input_precision")
        positional = len(node.args) > _INPUT_PRECISION_POSITION
        value = (
            precision.value
            if precision is not None
            else node.args[_INPUT_PRECISION_POSITION]
            if positional
            else None
        )
        allow_tf32 = keyword(node, "allow_tf32")

        if allow_tf32 is not None:
            node.keywords.remove(allow_tf32)

            if not _is_constant(allow_tf32.value, True):
                self.rewrote()
            else:
                value = ast.Constant("tf32")
                precision = ast.keyword("input_precision", value)
                node.keywords.append(precision)

        if _is_constant(value, "tf32x3"):
            replacement = ast.Constant("ieee")
        elif _is_constant(value, "tf32"):
            replacement = self._fp32_condition(node)
        elif isinstance(value, ast.Name) and _TF32_MODES & _bound_strings(
            self._function, value.id
        ):
            # The fp32 condition as the body of the tf32 branch, built as a
            # node: its unparsed text, itself a conditional, would take the
            # other branches as its own ``else``.
            replacement = ast.parse(
                f"(tf32 if {value.id} == 'tf32' else 'ieee' "
                f"if {value.id} == 'tf32x3' else {value.id})",
                mode="eval",
            ).body
            replacement.body = self._fp32_condition(node)
        else:
            return node

        if precision is not None:
            precision.value = replacement
        else:
            node.args[_INPUT_PRECISION_POSITION] = replacement

        self.rewrote()

        return node

    def _fp32_condition(self, node):
        if len(node.args) < 2:
            raise RewriteError(
                "a dot with tf32 whose operands are not positional.",
                "Pass dot's two operands positionally.",
            )

        if self._hoisted is None:
            raise RewriteError(
                "a dot with tf32 outside any statement list.", "Call dot in a kernel."
            )

        for index in (0, 1):
            if not isinstance(node.args[index], ast.Name):
                name = f"{OPERAND_PREFIX}{self._count}"
                self._count += 1
                self._hoisted.append(
                    ast.Assign([ast.Name(name, ast.Store())], node.args[index])
                )
                node.args[index] = ast.Name(name, ast.Load())

        dtypes = [f"{ast.unparse(node.args[index])}.dtype" for index in (0, 1)]
        out_dtype = keyword(node, "out_dtype")

        if out_dtype is not None:
            dtypes.append(ast.unparse(out_dtype.value))

        # Nested conditionals, not ``and``: Triton 3.2's frontend lowers
        # ``and`` through ``logical_and``, which Python bools lack.
        expression = "'hf32'"

        for dtype in reversed(dtypes):
            expression = (
                f"({expression} if {dtype} == triton.language.float32 else 'ieee')"
            )

        return ast.parse(expression, mode="eval").body


#: The fields of a node that hold statements (``If.body``; an
#: ``IfExp.body`` holds an expression).
_STATEMENT_FIELDS = ("body", "orelse", "finalbody")

#: The ``input_precision`` modes that do not exist on Ascend.
_TF32_MODES = {"tf32", "tf32x3"}


def _bound_strings(function, name):
    """The string literals bound to ``name`` in ``function``; empty if any binding of it is something else."""

    if function is None or name in {argument.arg for argument in function.args.args}:
        return set()

    values = set()

    for node in walk(function):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.For, ast.comprehension)):
            targets, value = [node.target], None
        else:
            continue

        if not any(
            isinstance(target, ast.Name) and target.id == name
            for target_node in targets
            for target in walk(target_node)
        ):
            continue

        if (
            len(targets) != 1
            or not isinstance(targets[0], ast.Name)
            or isinstance(node, ast.AugAssign)
            or not isinstance(value, ast.Constant)
            or not isinstance(value.value, str)
        ):
            return set()

        values.add(value.value)

    return values


def _is_constant(node, value):
    return isinstance(node, ast.Constant) and node.value == value
