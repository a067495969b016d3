"""Compute in fp32 where a kernel asks for fp64."""

import ast
import collections

from ninetoothed_ascend.compiler.passes import LoadWrapperPass, convert_if_dtype
from ninetoothed_ascend.compiler.syntax import (
    clone,
    find,
    insert_after_imports,
    statements,
)

#: The module-level ``triton.jit`` function that demotes a loaded fp64 block.
DEMOTE = "ninetoothed_ascend_float32_if_float64"

_DEMOTE_SOURCE = convert_if_dtype(DEMOTE, "float64", "float32")

#: The module-level ``triton.jit`` function that subtracts from a demoted
#: block in fp64: ``(wide, narrow, other)``, ``wide`` the block as loaded,
#: ``narrow`` what the kernel computes from it.
SUBTRACT = "ninetoothed_ascend_subtract_before_demoting"

_SUBTRACT_SOURCE = f"""
@triton.jit
def {SUBTRACT}(wide, narrow, other):
    if wide.dtype == triton.language.float64:
        if narrow.dtype == triton.language.float32:
            return (wide - other).to(triton.language.float32)
    return narrow - other
"""

#: The prefix of the name that keeps a demoted block as loaded.
_WIDE = "ninetoothed_float64_"


class LowerFloat64(LoadWrapperPass):
    """Turn fp64 arithmetic in kernels into fp32; fp64 stays only in memory.

    Constraint: Ascend's vector units have no fp64 arithmetic, and
    triton-ascend 3.2's frontend refuses every cast to or from fp64 ("[fp8,
    fp64] is unsupported on Ascend for now", ``cast`` in
    triton/triton_patch/language/semantic.py, unless compiling for the
    910_95); reproduced by
    ``tests/compiler/npu/test_lower_float64.py::test_fp64_fails_the_frontend_or_computes_in_fp64_without_the_pass``.
    triton-ascend's op support table (docs/sources/python-api/outline.md) has
    no fp64 column, and its dtype table (``op_dtype_config.py``, PR #2313)
    lists fp64 as unsupported on A2 and A5.

    In each ``triton.jit`` function:

    - every ``triton.language.float64`` (``cast(x, float64)``,
      ``x.to(float64)``, ``zeros(..., dtype=float64)``) becomes
      ``triton.language.float32``;
    - every ``triton.language.load(...)`` becomes
      ``ninetoothed_ascend_float32_if_float64(load(...))``, a ``triton.jit``
      function whose ``if`` on the block's dtype the frontend folds: blocks
      loaded from fp64 tensors are computed on in fp32, the others are left
      as they are (no operation is emitted for them).

    - a difference of a name bound once, to a loaded block (or a cast of
      one), and a constant (``x - 1.0``, ``1.0 - x``, ``x - tl.cast(1.0,
      dtype)``) is formed from the block as loaded, then demoted: where
      the block is fp64 and the name fp32, ``fp32(x64 - c)``, the fp32
      nearest the fp64 difference, instead of ``fp32(x64) - c``, whose
      leading digits cancel (ntops' acosh at ``x = 1.000001`` is
      ``log(x + sqrt((x - 1)(x + 1)))``: fp32 ``x - 1`` is off by 5% and
      the result by 3e-5, over the test's ``atol=1e-6, rtol=1e-5``). The
      block is kept in a name of its own (``ninetoothed_float64_<name>``);
      the choice is folded at trace time, so other dtypes compute as the
      kernel says (a kernel that casts an fp64 block to fp32 itself gets
      the nearer of the two fp32 differences too). The fp64 subtraction
      passes the compile check (``arith.subf`` on ``f64``), as the
      demotion's ``arith.truncf`` does; BiShengIR 1.2.0 refuses both
      ("unsupported datatype for arith::TruncFOp to hfusion"), so no
      kernel reading an fp64 tensor reaches ``hivmc``;

    - every pointer element type read in a kernel (``p.type.element_ty``,
      ``p.dtype.element_ty``: NineToothed's ``tensor.dtype.dtype``) becomes
      ``float32 if <it> == float64 else <it>``, which the frontend folds:
      ntops' acosh casts its constants to its output's element type, a
      cast to fp64 the frontend refuses.

    fp64 tensors stay fp64 in memory and are stored back as fp64 (the store
    converts). Scalars need nothing: NineToothed passes Python floats, which
    Triton types as fp32.

    A masked load of an fp64 tensor (every NineToothed load is masked)
    needs its fill value built in fp64, not cast to it:
    :class:`~ninetoothed_ascend.compiler.npu.build_float64_fill.BuildFloat64Fill`,
    later in the pipeline, does that
    (``test_acosh_of_an_fp64_tensor_passes_the_compile_check``).

    Precision: results of kernels on fp64 tensors, or that ask for fp64
    intermediates, are fp32-accurate (about 7 significant digits, range
    about 1e-38 to 3e38), not fp64-accurate; a difference of a loaded
    block and a constant is the fp32 nearest the fp64 one.

    :Constraint: Ascend vector units have no fp64; triton-ascend 3.2's `cast`
        refuses fp64 ("[fp8, fp64] is unsupported on Ascend for now")
    :Source: triton-ascend `triton_patch/language/semantic.py` (`cast`); op
        support table `docs/sources/python-api/outline.md` (no fp64 column);
        `op_dtype_config.py` (PR #2313);
        `tests/compiler/npu/test_lower_float64.py`
    :Rewrites: `tl.float64` in kernels becomes `tl.float32`; every load is
        wrapped in a `triton.jit` function that demotes fp64 blocks to fp32 (an
        `if` on the dtype, folded; nothing emitted for other dtypes). fp64
        tensors stay fp64 in memory. **Precision: fp64 kernels compute with
        fp32 accuracy (about 7 digits, range about 1e±38)**
    """

    WRAPPER = DEMOTE
    WRAPPER_SOURCE = _DEMOTE_SOURCE
    PRECISION = (
        "on fp64 tensors, and for fp64 intermediates, this kernel computes in "
        "fp32 (about 7 significant digits): its fp64 results can miss an fp64 "
        "tolerance"
    )

    def run(self, tree, module=None):
        self._subtracted = False

        return super().run(tree, module)

    def visit_FunctionDef(self, node):
        node = super().visit_FunctionDef(node)

        if any(
            self.resolve(decorator) == "triton.jit" for decorator in node.decorator_list
        ):
            self._subtract_before_demoting(node)

        return node

    def finish(self, tree):
        super().finish(tree)

        if self._subtracted:
            insert_after_imports(tree, ast.parse(_SUBTRACT_SOURCE).body)

    def _subtract_before_demoting(self, function):
        # A name bound once and not a parameter holds, wherever it is read,
        # the value of its one assignment: the block kept beside it is
        # assigned at the same point, so the two always agree.
        bindings = collections.Counter(
            name.id
            for name in find(function, ast.Name)
            if name.ctx.__class__ is ast.Store
        )
        parameters = {
            argument.arg
            for argument in ast.walk(function.args)
            if isinstance(argument, ast.arg)
        }
        taken = set(bindings) | parameters
        demoted = {}

        for parent in statements(function):
            for field in ("body", "orelse", "finalbody"):
                body = getattr(parent, field, None)

                if body.__class__ is not list:
                    continue

                for statement in body:
                    demote = self._demoted_load(statement)

                    if demote is None:
                        continue

                    name = statement.targets[0].id

                    if bindings[name] != 1 or name in parameters:
                        continue

                    demoted[name] = (demote, statement, body)

        if not demoted:
            return

        subtractor = _Subtract(self, demoted, taken)
        subtractor.visit(function)

        for name, wide in subtractor.wide.items():
            demote, assignment, body = demoted[name]
            index = next(
                position
                for position, statement in enumerate(body)
                if statement is assignment
            )
            body.insert(
                index,
                ast.Assign([ast.Name(wide, ast.Store())], demote.args[0]),
            )
            demote.args[0] = ast.Name(wide, ast.Load())

        if subtractor.wide:
            self._subtracted = True

    def _demoted_load(self, statement):
        # ``name = demote(load(...))``, or a cast of it (``tl.cast(...,
        # dtype)``, ``....to(dtype)``): the demote call, else ``None``.
        if not (
            statement.__class__ is ast.Assign
            and len(statement.targets) == 1
            and statement.targets[0].__class__ is ast.Name
        ):
            return None

        value = statement.value

        if self.is_call_to(value, "triton.language.cast") and value.args:
            value = value.args[0]
        elif (
            value.__class__ is ast.Call
            and value.func.__class__ is ast.Attribute
            and value.func.attr == "to"
        ):
            value = value.func.value

        if (
            value.__class__ is ast.Call
            and value.func.__class__ is ast.Name
            and value.func.id == DEMOTE
            and len(value.args) == 1
        ):
            return value

        return None

    def is_constant(self, node):
        """Whether ``node`` is a number, negated or not, or a cast of one (``tl.cast(1.0, dtype)``, ``(1.0).to(dtype)``)."""

        if node.__class__ is ast.UnaryOp and node.op.__class__ in (ast.USub, ast.UAdd):
            node = node.operand

        if node.__class__ is ast.Constant:
            return node.value.__class__ in (int, float)

        if node.__class__ is ast.Call:
            if self.is_call_to(node, "triton.language.cast") and node.args:
                return self.is_constant(node.args[0])

            if node.func.__class__ is ast.Attribute and node.func.attr == "to":
                return self.is_constant(node.func.value)

        return False

    def visit_Attribute(self, node):
        if self.in_kernel and self.resolve(node) == "triton.language.float64":
            self.rewrote()

            return ast.copy_location(
                ast.parse("triton.language.float32", mode="eval").body, node
            )

        self.generic_visit(node)

        if self.in_kernel and _is_element_type(node):
            # A pointer's element type, read at trace time: fp64 for an fp64
            # tensor, and so a cast to it (ntops' ``cast(1.0, dtype)``) is
            # refused. Compared, not rewritten, so other dtypes are kept.
            self.rewrote()
            chosen = ast.parse(
                "triton.language.float32 if ELEMENT == triton.language.float64 "
                "else ELEMENT",
                mode="eval",
            ).body
            chosen.test.left = node
            chosen.orelse = clone(node)

            return ast.copy_location(chosen, node)

        return node


class _Subtract(ast.NodeTransformer):
    # Rewrites ``name - c`` and ``c - name`` of the demoted names, naming
    # the block each keeps (``wide``: name -> the block's name).

    def __init__(self, owner, demoted, taken):
        self.owner = owner
        self.demoted = demoted
        self.taken = taken
        self.wide = {}

    def visit_BinOp(self, node):
        self.generic_visit(node)

        if node.op.__class__ is not ast.Sub:
            return node

        for name, other, negate in (
            (node.left, node.right, False),
            (node.right, node.left, True),
        ):
            if (
                name.__class__ is ast.Name
                and name.id in self.demoted
                and self.owner.is_constant(other)
            ):
                self.owner.rewrote()
                wide = self.wide.get(name.id)

                if wide is None:
                    wide = _WIDE + name.id

                    while wide in self.taken:
                        wide += "_"

                    self.taken.add(wide)
                    self.wide[name.id] = wide

                difference = ast.Call(
                    ast.Name(SUBTRACT, ast.Load()),
                    [ast.Name(wide, ast.Load()), ast.Name(name.id, ast.Load()), other],
                    [],
                )

                if negate:
                    difference = ast.UnaryOp(ast.USub(), difference)

                return ast.copy_location(difference, node)

        return node


def _is_element_type(node):
    # ``x.type.element_ty`` or ``x.dtype.element_ty``: what NineToothed
    # writes for an application's ``tensor.dtype.dtype`` (the pointer's).
    return (
        node.attr == "element_ty"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr in ("type", "dtype")
    )
