"""The NPU pass :class:`KeepLoopCarriedDtype`."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import insert_after_imports

#: The module-level ``triton.jit`` function that gives a bf16 loop-carried
#: variable back its dtype.
KEEP = "ninetoothed_ascend_keep_bfloat16"

_KEEP_SOURCE = f"""
@triton.jit
def {KEEP}(value, carried):
    if carried.dtype == triton.language.bfloat16:
        if value.dtype == triton.language.float32:
            return value.to(triton.language.bfloat16)
        else:
            return value
    else:
        return value
"""

#: The functions that turn bf16 operands into fp32 in triton-ascend 3.2.0
#: (``_promote_bfloat16_to_float32``, "hardware doesn't support FMAX, FMIN,
#: CMP for bfloat16"): ``sum``, ``max``, ``min``, ``cumsum``, ``cumprod``
#: (``triton/language/standard.py``, ``triton/triton_patch/language/standard.py``),
#: ``maximum``, ``minimum``, ``clamp`` (``triton/language/core.py``).
PROMOTING = (
    "triton.language.sum",
    "triton.language.max",
    "triton.language.min",
    "triton.language.cumsum",
    "triton.language.cumprod",
    "triton.language.maximum",
    "triton.language.minimum",
    "triton.language.clamp",
)

# Calls that give their result the dtype they are told.
_CASTS = ("triton.language.cast", "triton.language.zeros", "triton.language.full")


class KeepLoopCarriedDtype(Pass):
    """Keep a bf16 loop-carried variable bf16 where triton-ascend 3.2 widens what it is reassigned to fp32.

    Constraint: Triton's frontend makes each variable a loop reassigns a
    loop-carried value and refuses a loop whose body changes its dtype
    ("Loop-carried variable denominator has initial type bf16 but is
    re-assigned to fp32 in loop!", ``CodeGenerator._verify_loop_carried_variable``
    in ``triton/compiler/code_generator.py``). triton-ascend 3.2.0's
    :data:`PROMOTING` functions return fp32 for bf16 operands, where CUDA
    Triton's ``sum`` keeps bf16 (3.6.0 and 3.9.0, ``_pick_sum_dtype``), so a
    kernel that runs on CUDA fails the NPU frontend: ntops' softmax and
    logsumexp in bf16 (``denominator = denominator * d + sum(e)``, 7 and 8
    launches failing ``ttir``, ``ninetoothed-ascend check --manifest`` on
    them in the triton-ascend environment; the same loop on CUDA Triton
    3.6.0, measured on an H200, compiles and keeps ``denominator`` bf16).

    In each ``triton.jit`` function, an assignment inside a ``for`` or
    ``while`` loop to a name bound before the loop (a loop-carried
    variable), whose value may carry a promoted dtype (it calls a
    :data:`PROMOTING` function, or computes on a name that holds such a
    value, with no cast in between), becomes ``name =
    ninetoothed_ascend_keep_bfloat16(value, name)``: a ``triton.jit``
    function added to the module whose ``if`` on the dtypes the frontend
    folds. Where the carried value is bf16 and the new one fp32, the new
    one is rounded to bf16; otherwise it is returned as it is, so no other
    dtype change is hidden from the frontend. A variable whose binding
    before the loop fixes a dtype other than bf16 (``zeros``, ``full``,
    ``cast`` or ``.to`` with a ``triton.language`` dtype) is left as it is.

    Precision: where it rounds, the value was computed in fp32 and is
    rounded once to bf16, the dtype the CUDA variant keeps it in; the CUDA
    variant's ``sum`` adds in bf16.

    :Constraint: the frontend refuses a loop whose body changes a loop-carried
        variable's dtype ("Loop-carried variable denominator has initial type
        bf16 but is re-assigned to fp32"); triton-ascend 3.2.0's `sum`, `max`,
        `min`, `cumsum`, `cumprod`, `maximum`, `minimum` and `clamp` return
        fp32 for bf16 operands (`_promote_bfloat16_to_float32`), where CUDA
        Triton's `sum` keeps bf16: ntops' softmax and logsumexp in bf16
        (`denominator = denominator * d + sum(e)`)
    :Source: triton-ascend 3.2.0 `triton/language/standard.py`,
        `triton/language/core.py`,
        `CodeGenerator._verify_loop_carried_variable`; measured: the ntops
        launches with `ninetoothed-ascend check --manifest`, the same loop on
        CUDA Triton 3.6.0 (H200) keeps bf16;
        `tests/compiler/npu/test_keep_loop_carried_dtype.py`
    :Rewrites: in `triton.jit` functions, an assignment in a `for`/`while` loop
        to a name bound before it, whose value may carry a promoted dtype
        (calls one of those functions, or computes on a name holding such a
        value, with no cast in between), and whose binding at the loop's entry
        does not fix a dtype other than bf16, becomes `name =
        ninetoothed_ascend_keep_bfloat16(value, name)`: a helper that rounds an
        fp32 value to bf16 where the carried value is bf16 and returns it
        unchanged otherwise (the frontend folds its `if`s)
    """

    TRIGGERS = PROMOTING

    def run(self, tree, module=None):
        self._used = False

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        if any(
            self.resolve(decorator) == "triton.jit" for decorator in node.decorator_list
        ):
            bound = {
                argument.arg: None
                for argument in (*node.args.posonlyargs, *node.args.args)
            }
            self._block(node.body, bound, set(), ())

        return node

    def finish(self, tree):
        if self._used:
            insert_after_imports(tree, ast.parse(_KEEP_SOURCE).body)

    # ``bound``: name -> the expression it was last bound to (``None``: no
    # expression, a parameter or a loop index), in the frontend's order of
    # tracing, which is the text's (a loop body is traced once). ``promoted``:
    # the names whose value may carry a promoted dtype. ``loops``: for each
    # enclosing loop, innermost last, ``bound`` at its entry.
    def _block(self, statements, bound, promoted, loops):
        for index, statement in enumerate(statements):
            statements[index] = self._statement(statement, bound, promoted, loops)

    def _statement(self, statement, bound, promoted, loops):
        if isinstance(statement, ast.Assign) and _single_name(statement.targets):
            (target,) = statement.targets
            statement.value = self._assigned(
                target.id, statement.value, statement.value, bound, promoted, loops
            )
        elif isinstance(statement, ast.AugAssign) and isinstance(
            statement.target, ast.Name
        ):
            name = statement.target.id
            value = ast.BinOp(ast.Name(name, ast.Load()), statement.op, statement.value)
            kept = self._assigned(name, value, None, bound, promoted, loops)

            if kept is not None:
                # ``name op= x`` becomes ``name = keep(name op x, name)``.
                assign = ast.Assign([ast.Name(name, ast.Store())], kept)

                return ast.copy_location(assign, statement)
        elif isinstance(statement, (ast.For, ast.While)):
            entry = dict(bound)

            if isinstance(statement, ast.For):
                for name in _stored_names(statement.target):
                    bound[name] = None

            self._block(statement.body, bound, promoted, (*loops, entry))
            self._block(statement.orelse, bound, promoted, loops)
        elif isinstance(statement, ast.If):
            orelse_bound, orelse_promoted = dict(bound), set(promoted)
            self._block(statement.body, bound, promoted, loops)
            self._block(statement.orelse, orelse_bound, orelse_promoted, loops)

            for name, value in orelse_bound.items():
                bound[name] = value if bound.get(name, value) is value else None

            promoted |= orelse_promoted
        elif isinstance(statement, (ast.With, ast.Try)):
            for name in _stored_names(statement):
                bound[name] = None

            for field in ("body", "orelse", "finalbody"):
                self._block(getattr(statement, field, []), bound, promoted, loops)
        else:
            # A tuple assignment, an import: bound to no one expression; a
            # name unpacked from a value that may carry a promoted dtype may.
            widens = isinstance(statement, ast.Assign) and self._may_promote(
                statement.value, promoted
            )

            for name in _stored_names(statement):
                bound[name] = None

                if widens:
                    promoted.add(name)
                else:
                    promoted.discard(name)

        return statement

    def _assigned(self, name, value, unchanged, bound, promoted, loops):
        # The value ``name`` is assigned (``value``), kept bf16 where it is a
        # loop-carried variable that may widen; ``unchanged`` where it stays.
        widens = self._may_promote(value, promoted)
        entry = next((entry for entry in reversed(loops) if name in entry), None)
        kept = unchanged

        if widens and entry is not None and not self._fixes_dtype(entry[name]):
            kept = ast.Call(
                ast.Name(KEEP, ast.Load()), [value, ast.Name(name, ast.Load())], []
            )
            self._used = True
            self.rewrote()
            widens = False

        bound[name] = value

        if widens:
            promoted.add(name)
        else:
            promoted.discard(name)

        return kept

    def _may_promote(self, node, promoted):
        if isinstance(node, ast.Name):
            return node.id in promoted

        if isinstance(node, ast.Call):
            if self.is_call_to(node, *PROMOTING):
                return True

            if self.is_call_to(node, *_CASTS) or (
                isinstance(node.func, ast.Attribute) and node.func.attr == "to"
            ):
                return False

            return any(
                self._may_promote(argument, promoted)
                for argument in (
                    *node.args,
                    *(keyword.value for keyword in node.keywords),
                )
            )

        if isinstance(node, ast.BinOp):
            return self._may_promote(node.left, promoted) or self._may_promote(
                node.right, promoted
            )

        if isinstance(node, ast.UnaryOp):
            return self._may_promote(node.operand, promoted)

        if isinstance(node, ast.IfExp):
            return self._may_promote(node.body, promoted) or self._may_promote(
                node.orelse, promoted
            )

        if isinstance(node, ast.Subscript):
            return self._may_promote(node.value, promoted)

        # A comparison is a boolean; a constant, an attribute (``x.dtype``)
        # has no promoted dtype.
        return False

    def _fixes_dtype(self, node):
        # Whether ``node`` gives its value a ``triton.language`` dtype other than bf16.
        if not isinstance(node, ast.Call):
            return False

        if self.is_call_to(node, "triton.language.cast"):
            dtype = _argument(node, 1, "dtype")
        elif self.is_call_to(node, "triton.language.zeros"):
            dtype = _argument(node, 1, "dtype")
        elif self.is_call_to(node, "triton.language.full"):
            dtype = _argument(node, 2, "dtype")
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            dtype = _argument(node, 0, "dtype")
        else:
            return False

        name = self.resolve(dtype) if dtype is not None else None

        return (
            name is not None
            and name.startswith("triton.language.")
            and name != "triton.language.bfloat16"
        )


def _single_name(targets):
    return len(targets) == 1 and isinstance(targets[0], ast.Name)


def _stored_names(node):
    # The names ``node`` binds, nested statements included.
    return [
        child.id
        for child in ast.walk(node)
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store)
    ]


def _argument(call, position, name):
    if len(call.args) > position:
        return call.args[position]

    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value

    return None
